//! The SwitchVM assembler: any text either assembles or gets an error (never a panic), and what
//! assembles disassembles to source that assembles back to the same DPF.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(src) = innet_switchvm::asm::assemble(text, 4, 4) else { return };
    let listing = innet_switchvm::asm::disassemble(&src, 4);
    let again = innet_switchvm::asm::assemble(&listing, 4, 4).unwrap_or_else(|e| panic!("the disassembly does not assemble: {e}\n{listing}"));
    assert_eq!(again, src, "assemble ∘ disassemble changed the DPF:\n{listing}");
});
