"""A Python builder for SwitchVM data-plane filters (DPFs).

It writes the assembly language of docs/switchvm.md and runs the project's assembler on it, so a
DPF built here is checked exactly as a `.dpf` file is (register groups, lanes, labels, stages)::

    from innet.switchvm import Dpf

    d = Dpf("counter")
    d.prolog(A0="pop")
    d.eu(0).imm("B0", 1).mem(0, "faadd")
    d.eu(1).mov("A1", "B0").imm("B1", 1).alu(1, "add")
    d.epilog("out").push("A0", "A1")
    out = d.assemble()          # listing, in-packet bytes, summary
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

PROLOG_OPS = {"pop", "peek", "rand"}
ALU_OPS = {"add", "sub", "and", "or", "xor", "lsh", "rsh", "neg", "min", "max"}
MEM_OPS = {"load", "store", "faadd", "faor", "faand", "famax", "famin"}
BRANCH_OPS = {"beq", "bset", "blt", "bgt", "blts", "bgts"}


class DpfError(ValueError):
    """The DPF is not valid; the message names what and where (in the generated source)."""


def _operand(x: str | int) -> str:
    return str(x) if isinstance(x, int) else x


@dataclass
class _Eu:
    label: str
    lines: list[str] = field(default_factory=list)

    def mov(self, dst: str, src: str) -> "_Eu":
        """dst = src (any register)."""
        self.lines.append(f"{dst} = mov {src}")
        return self

    def imm(self, dst: str, value: int) -> "_Eu":
        """dst = an immediate (B registers only)."""
        self.lines.append(f"{dst} = imm {value}")
        return self

    def const(self, dst: str, index: int) -> "_Eu":
        """dst = the switch's constant `index` (B registers only)."""
        self.lines.append(f"{dst} = const {index}")
        return self

    def hash(self, dst: str) -> "_Eu":
        """dst = the lane's CRC of dst (A registers only)."""
        self.lines.append(f"{dst} = hash")
        return self

    def alu(self, lane: int, op: str) -> "_Eu":
        """A[lane] = A[lane] op B[lane]."""
        if op not in ALU_OPS:
            raise DpfError(f"unknown ALU op {op!r}; expected one of {sorted(ALU_OPS)}")
        self.lines.append(f"alu{lane} {op}")
        return self

    def mem(self, lane: int, op: str) -> "_Eu":
        """The lane's memory op at address A[lane] with data B[lane] (the old value lands in B)."""
        if op not in MEM_OPS:
            raise DpfError(f"unknown memory op {op!r}; expected one of {sorted(MEM_OPS)}")
        self.lines.append(f"mem{lane} {op}")
        return self

    def branch(self, op: str, x: str | int, y: str | int, taken: str, not_taken: str) -> "_Eu":
        """The EU's one branch: to `taken` if x op y, else to `not_taken` (labels of the next stage)."""
        if op not in BRANCH_OPS:
            raise DpfError(f"unknown branch {op!r}; expected one of {sorted(BRANCH_OPS)}")
        self.lines.append(f"{op} {_operand(x)}, {_operand(y)} -> {taken} else {not_taken}")
        return self

    def jmp(self, target: str) -> "_Eu":
        self.lines.append(f"jmp -> {target}")
        return self

    def halt(self, epilog: str) -> "_Eu":
        """Skip the remaining EUs and run this epilog."""
        self.lines.append(f"halt -> {epilog}")
        return self

    def goto(self, target: str) -> "_Eu":
        """Fall through to this label of the next stage."""
        self.lines.append(f"-> {target}")
        return self


@dataclass
class _Epilog:
    label: str
    lines: list[str] = field(default_factory=list)

    def push(self, *regs: str) -> "_Epilog":
        self.lines.append("push " + ", ".join(regs))
        return self

    def fwd(self, index: str | int) -> "_Epilog":
        """Steer by the tenant's steering rule `index` (a number or a register)."""
        self.lines.append(f"fwd {_operand(index)}")
        return self

    def next_pc(self, pc: str | int) -> "_Epilog":
        """Chain: the next DPF's init_pc (bit 15 set: in-packet code)."""
        self.lines.append(f"next_pc {pc:#06x}" if isinstance(pc, int) else f"next_pc {pc}")
        return self

    def drop_code(self) -> "_Epilog":
        self.lines.append("drop_code")
        return self


@dataclass
class Assembled:
    listing: str
    in_packet: bytes | None
    in_packet_note: str
    summary: dict


class Dpf:
    """A DPF under construction: one prolog, labelled instructions per EU, labelled epilogs."""

    def __init__(self, name: str) -> None:
        if not name or not name.replace("_", "").isalnum():
            raise DpfError(f"a DPF name is letters, digits and _, got {name!r}")
        self.name = name
        self._prolog: list[str] = []
        self._eus: dict[int, list[_Eu]] = {}
        self._epilogs: list[_Epilog] = []

    def prolog(self, goto: str | None = None, **regs: str) -> "Dpf":
        """Initialise registers: prolog(A0="pop", A1="peek", B0="rand", A2=("md", 1))."""
        for reg, op in regs.items():
            if isinstance(op, tuple) and len(op) == 2 and op[0] == "md":
                self._prolog.append(f"{reg} = md {op[1]}")
            elif op in PROLOG_OPS:
                self._prolog.append(f"{reg} = {op}")
            else:
                raise DpfError(f"{reg}: the prolog loads pop, peek, rand or ('md', N), got {op!r}")
        if goto is not None:
            self._prolog.append(f"-> {goto}")
        return self

    def eu(self, index: int, label: str = "s") -> _Eu:
        """A new instruction of EU `index` with this label (the first one is the entry)."""
        if index < 0:
            raise DpfError(f"EU index {index} is negative")
        e = _Eu(label)
        self._eus.setdefault(index, []).append(e)
        return e

    def epilog(self, label: str = "out") -> _Epilog:
        e = _Epilog(label)
        self._epilogs.append(e)
        return e

    def source(self) -> str:
        """The DPF as assembly text."""
        out = [f"dpf {self.name}", "prolog:"]
        out += [f"    {x}" for x in self._prolog]
        for index in sorted(self._eus):
            for e in self._eus[index]:
                out.append(f"eu{index} {e.label}:")
                out += [f"    {x}" for x in e.lines]
        if not self._epilogs:
            self._epilogs.append(_Epilog("out"))
        for ep in self._epilogs:
            out.append(f"epilog {ep.label}:")
            out += [f"    {x}" for x in ep.lines]
        return "\n".join(out) + "\n"

    def assemble(self, eus: int = 4, lanes: int = 4) -> Assembled:
        """Assemble with the project's assembler; DpfError on any error (with the source)."""
        from innet import _native

        text = self.source()
        try:
            listing, data, why, summary = _native.switchvm_asm(text, eus=eus, lanes=lanes)
        except _native.UserInputError as e:
            numbered = "\n".join(f"{i + 1:3} {line}" for i, line in enumerate(text.splitlines()))
            raise DpfError(f"{self.name}: {e}\n{numbered}") from None
        return Assembled(listing, bytes(data) if data is not None else None, why, json.loads(summary))
