//! Named TCP settings shared by experiments: profiles (the SwitchV2P artifact's ns-3 settings,
//! Linux-like datacenter defaults, ns-3's defaults) and the congestion-control choice by name.

use innet_registry::ExperimentError;

use super::{CongestionControl, Hystart, TcpConfig};
use crate::time::{PS_PER_MS, PS_PER_US};

/// TCP settings by profile name, congestion control name and CUBIC's HyStart rule (`profile`
/// for the profile's own choice, else off, rfc9406 or ns3; only CUBIC has one).
pub fn tcp_config(profile: &str, congestion_control: &str, hystart: &str) -> Result<TcpConfig, ExperimentError> {
    let mut cfg = TcpConfig::default();
    // Each profile's HyStart; every profile keeps RFC 9406 HyStart++ today (the SwitchV2P
    // artifact's ns-3 runs ns-3's own HyStart: `hystart=ns3` selects it).
    let profile_hystart = match profile {
        // The SwitchV2P artifact: 1024 B segments, IW 10, min RTO 10 ms, dup-ACK threshold 2048
        // (fast retransmit off), delayed ACK every 2 segments, initial RTO from a 106 µs RTT guess.
        "switchv2p" => {
            cfg.mss_bytes = 1024;
            cfg.initial_cwnd_segments = 10;
            cfg.min_rto_ps = 10 * PS_PER_MS;
            cfg.dupack_threshold = 2048;
            cfg.delayed_ack_count = 2;
            cfg.initial_rto_ps = 3 * 106 * PS_PER_US;
            Hystart::Rfc9406
        }
        // Datacenter defaults: 1460 B segments, IW 10, min RTO 1 ms, fast retransmit at 3, and a
        // delayed-ACK timeout (200 µs) below the min RTO so a flow's last odd segment is not
        // retransmitted spuriously.
        "datacenter" => {
            cfg.mss_bytes = 1460;
            cfg.initial_cwnd_segments = 10;
            cfg.min_rto_ps = PS_PER_MS;
            cfg.dupack_threshold = 3;
            cfg.delayed_ack_timeout_ps = 200 * PS_PER_US;
            Hystart::Rfc9406
        }
        // ns-3 3.37 defaults with 1000 B segments (the simulator benchmark's TCP variant).
        "ns3" => {
            cfg.mss_bytes = 1000;
            cfg.initial_cwnd_segments = 10;
            cfg.min_rto_ps = 1_000 * PS_PER_MS;
            cfg.dupack_threshold = 3;
            cfg.delayed_ack_count = 2;
            Hystart::Rfc9406
        }
        other => return Err(ExperimentError::bad_param("tcp_profile", other, "switchv2p, datacenter or ns3")),
    };
    let hystart_rule = match hystart {
        "profile" => profile_hystart,
        name => Hystart::by_name(name).ok_or_else(|| ExperimentError::bad_param("hystart", name, "profile, off, rfc9406 or ns3"))?,
    };
    cfg.congestion_control = match congestion_control {
        "cubic" => CongestionControl::cubic().with_hystart(hystart_rule),
        "dctcp" => {
            cfg.ecn = true;
            CongestionControl::dctcp()
        }
        "newreno" => CongestionControl::NewReno,
        other => return Err(ExperimentError::bad_param("congestion_control", other, "cubic, dctcp or newreno")),
    };
    if congestion_control != "cubic" && hystart != "profile" {
        return Err(ExperimentError::param("hystart", format!("only CUBIC has a HyStart rule; leave it at profile with {congestion_control}, got '{hystart}'")));
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(cfg: &TcpConfig) -> Option<Hystart> {
        match cfg.congestion_control {
            CongestionControl::Cubic { hystart, .. } => Some(hystart),
            _ => None,
        }
    }

    #[test]
    fn hystart_by_name_and_the_profiles_own() {
        for profile in ["switchv2p", "datacenter", "ns3"] {
            let cfg = tcp_config(profile, "cubic", "profile").unwrap();
            assert_eq!(rule(&cfg), Some(Hystart::Rfc9406), "{profile} keeps HyStart++");
        }
        for (name, want) in [("ns3", Hystart::Ns3), ("off", Hystart::Off), ("rfc9406", Hystart::Rfc9406)] {
            let cfg = tcp_config("switchv2p", "cubic", name).unwrap();
            assert_eq!(rule(&cfg), Some(want));
            assert_eq!(cfg.mss_bytes, 1024, "the rest of the profile stays");
        }
        let err = tcp_config("switchv2p", "cubic", "linux").unwrap_err().to_string();
        assert!(err.contains("hystart") && err.contains("linux"), "{err}");
        let err = tcp_config("switchv2p", "dctcp", "ns3").unwrap_err().to_string();
        assert!(err.contains("hystart") && err.contains("CUBIC"), "{err}");
        assert!(tcp_config("switchv2p", "dctcp", "profile").is_ok());
    }
}
