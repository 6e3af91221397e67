//! Programs the real switch can run by name (`innet switch run --program NAME`), and the
//! `--set key=value` settings they take. This module holds the runtime's own programs
//! (`forward`); system crates add theirs in crates/py's `switch_programs()` list.

use std::collections::{BTreeMap, BTreeSet};

use innet_wire::phv::Packet;

use super::switch::{FrameSwitch, RealConfig, RealSwitch};
use crate::program::{Ctx, Metadata, Program, Verdict};
use crate::control::NoControl;

/// `--set key=value` pairs for a program. Each getter marks its key as used; `finish` fails on
/// keys no one asked for, naming them and the known ones, so a typo is an error, not a default.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    values: BTreeMap<String, String>,
    known: BTreeSet<String>,
}

impl Settings {
    pub fn new(values: BTreeMap<String, String>) -> Self {
        Settings {
            values,
            known: BTreeSet::new(),
        }
    }

    fn raw(&mut self, key: &str) -> Option<&str> {
        self.known.insert(key.to_string());
        self.values.get(key).map(|s| s.as_str())
    }

    pub fn str(&mut self, key: &str, default: &str) -> String {
        self.raw(key).unwrap_or(default).to_string()
    }

    pub fn u64(&mut self, key: &str, default: u64) -> Result<u64, String> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--set {key}={v}: expected a whole number")),
        }
    }

    pub fn f64(&mut self, key: &str, default: f64) -> Result<f64, String> {
        match self.raw(key) {
            None => Ok(default),
            Some(v) => v
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("--set {key}={v}: expected a number")),
        }
    }

    pub fn bool(&mut self, key: &str, default: bool) -> Result<bool, String> {
        match self.raw(key) {
            None => Ok(default),
            Some("true" | "1" | "yes" | "on") => Ok(true),
            Some("false" | "0" | "no" | "off") => Ok(false),
            Some(v) => Err(format!("--set {key}={v}: expected true or false")),
        }
    }

    /// Error on keys no getter asked for.
    pub fn finish(&self, program: &str) -> Result<(), String> {
        let unknown: Vec<&str> = self
            .values
            .keys()
            .filter(|k| !self.known.contains(*k))
            .map(|k| k.as_str())
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let known: Vec<&str> = self.known.iter().map(|k| k.as_str()).collect();
        Err(format!(
            "program '{program}': unknown setting(s) {}; known: {}",
            unknown.join(", "),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ))
    }
}

/// Builds a program's switch for `num_ports` ports from its settings.
pub type BuildFn = fn(&mut Settings, u16) -> Result<Box<dyn FrameSwitch>, String>;

/// A program the real switch can run.
#[derive(Clone, Copy)]
pub struct ProgramSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub build: BuildFn,
}

impl ProgramSpec {
    /// Build with settings, failing on unknown ones.
    pub fn instantiate(
        &self,
        settings: BTreeMap<String, String>,
        num_ports: u16,
    ) -> Result<Box<dyn FrameSwitch>, String> {
        let mut s = Settings::new(settings);
        let sw = (self.build)(&mut s, num_ports)?;
        s.finish(self.name)?;
        Ok(sw)
    }
}

/// The runtime's own programs.
pub fn builtin_programs() -> Vec<ProgramSpec> {
    vec![ProgramSpec {
        name: "forward",
        description: "Pass-through: every packet to the other port (a learning bridge with more than two ports). \
                      Settings: recirculations=N (extra passes per packet), timer_us=N (a periodic program timer).",
        build: build_forward,
    }]
}

/// The pass-through program. Its options exercise the runtime's externs (recirculation,
/// timers) on real traffic.
pub struct Forward {
    /// Passes through the pipeline each packet makes before it is forwarded.
    pub recirculations: u16,
    pub timer_period_ps: u64,
    pub timer_ticks: u64,
    pub forwarded: u64,
    timer_armed: bool,
}

const TIMER_TICK: u64 = 1;

impl Program for Forward {
    fn name(&self) -> &str {
        "forward"
    }
    fn ingress(&mut self, pkt: &mut Packet, _meta: &mut Metadata, ctx: &mut Ctx<'_>) -> Verdict {
        if self.timer_period_ps > 0 && !self.timer_armed {
            self.timer_armed = true;
            ctx.set_timer(ctx.now_ps + self.timer_period_ps, TIMER_TICK);
        }
        if pkt.recirculations < self.recirculations {
            return Verdict::Recirculate;
        }
        self.forwarded += 1;
        Verdict::Route
    }
    fn timer(&mut self, token: u64, ctx: &mut Ctx<'_>) {
        if token == TIMER_TICK {
            self.timer_ticks += 1;
            ctx.set_timer(ctx.now_ps + self.timer_period_ps, TIMER_TICK);
        }
    }
}

fn build_forward(s: &mut Settings, num_ports: u16) -> Result<Box<dyn FrameSwitch>, String> {
    let recirculations = s.u64("recirculations", 0)?;
    if recirculations > 16 {
        return Err(format!("--set recirculations={recirculations}: at most 16"));
    }
    let timer_us = s.u64("timer_us", 0)?;
    let program = Forward {
        recirculations: recirculations as u16,
        timer_period_ps: timer_us.saturating_mul(1_000_000),
        timer_ticks: 0,
        forwarded: 0,
        timer_armed: false,
    };
    let sw = RealSwitch::new(program, NoControl, RealConfig::ports(num_ports))?.with_report(
        |p: &Forward, _| {
            vec![
                ("forwarded".into(), p.forwarded.to_string()),
                ("timer_ticks".into(), p.timer_ticks.to_string()),
            ]
        },
    );
    Ok(Box::new(sw))
}
