//! The real-packet runtime and the application switch build without the simulator: neither
//! `innet-switch` nor `innet-appswitch` may depend on `innet-sim` or `innet-dataplane` (the
//! simulated switch), directly or through each other (docs/architecture.md, "Crates").

use std::process::Command;

#[test]
fn switch_and_appswitch_do_not_depend_on_the_simulator() {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta = String::from_utf8(out.stdout).expect("utf-8");
    // The resolved graph: each node's id, then its dependencies' ids.
    let v: serde_json::Value = serde_json::from_str(&meta).expect("json");
    let nodes = v["resolve"]["nodes"].as_array().expect("resolve.nodes");
    let name_of = |id: &str| -> String {
        v["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == id)
            .map(|p| p["name"].as_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let deps_of = |name: &str| -> Vec<String> {
        let node = nodes.iter().find(|n| name_of(n["id"].as_str().unwrap()) == name).expect(name);
        node["dependencies"].as_array().unwrap().iter().map(|d| name_of(d.as_str().unwrap())).collect()
    };
    for krate in ["innet-switch", "innet-appswitch"] {
        // Everything reachable from the crate (normal and dev dependencies alike).
        let mut seen = vec![krate.to_string()];
        let mut i = 0;
        while i < seen.len() {
            for d in deps_of(&seen[i].clone()) {
                if d.starts_with("innet-") && !seen.contains(&d) {
                    seen.push(d);
                }
            }
            i += 1;
        }
        // The walk sees through to the packet layer (else it proves nothing).
        assert!(seen.contains(&"innet-wire".to_string()), "{krate}: {seen:?}");
        for bad in ["innet-sim", "innet-dataplane"] {
            assert!(!seen.contains(&bad.to_string()), "{krate} reaches {bad}: {seen:?}");
        }
    }
}
