//! Named TCP settings shared by experiments: profiles (the SwitchV2P artifact's ns-3 settings,
//! Linux-like datacenter defaults, ns-3's defaults) and the congestion-control choice by name.

use innet_registry::ExperimentError;

use super::{CongestionControl, TcpConfig};
use crate::time::{PS_PER_MS, PS_PER_US};

/// TCP settings by profile name and congestion control name.
pub fn tcp_config(profile: &str, congestion_control: &str) -> Result<TcpConfig, ExperimentError> {
    let mut cfg = TcpConfig::default();
    match profile {
        // The SwitchV2P artifact: 1024 B segments, IW 10, min RTO 10 ms, dup-ACK threshold 2048
        // (fast retransmit off), delayed ACK every 2 segments, initial RTO from a 106 µs RTT guess.
        "switchv2p" => {
            cfg.mss_bytes = 1024;
            cfg.initial_cwnd_segments = 10;
            cfg.min_rto_ps = 10 * PS_PER_MS;
            cfg.dupack_threshold = 2048;
            cfg.delayed_ack_count = 2;
            cfg.initial_rto_ps = 3 * 106 * PS_PER_US;
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
        }
        // ns-3 3.37 defaults with 1000 B segments (the simulator benchmark's TCP variant).
        "ns3" => {
            cfg.mss_bytes = 1000;
            cfg.initial_cwnd_segments = 10;
            cfg.min_rto_ps = 1_000 * PS_PER_MS;
            cfg.dupack_threshold = 3;
            cfg.delayed_ack_count = 2;
        }
        other => {
            return Err(ExperimentError::BadParam {
                field: "tcp_profile".into(),
                message: format!("expected switchv2p, datacenter or ns3, got '{other}'"),
            })
        }
    }
    cfg.congestion_control = match congestion_control {
        "cubic" => CongestionControl::cubic(),
        "dctcp" => {
            cfg.ecn = true;
            CongestionControl::dctcp()
        }
        "newreno" => CongestionControl::NewReno,
        other => {
            return Err(ExperimentError::BadParam {
                field: "congestion_control".into(),
                message: format!("expected cubic, dctcp or newreno, got '{other}'"),
            })
        }
    };
    Ok(cfg)
}
