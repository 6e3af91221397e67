//! Fig. 19's difference in isolation: nanoseconds to find a QUERY SELECT's table and key with the
//! statement lexer (`parser=lexical`) vs at fixed byte offsets (`parser=fixed`), for the
//! statements `appswitch.lexical` sends (key and table-name length N).
//!
//!     cargo run --release -p innet-appswitch --example parse_cost [-- ITERATIONS]

use std::hint::black_box;
use std::time::Instant;

use innet_wire::cql::statement::parse_statement;
use innet_appswitch::fixed_fields::{FixedLayout, Span};

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    println!("N\tlexical_ns\tfixed_ns\tstatement");
    for n in [4usize, 8, 16] {
        let table = "t".repeat(n);
        let key = format!("{:0width$x}", 42, width = n);
        let text = format!("SELECT v FROM fig12.{table} WHERE k = '{key}'");
        let t0 = text.find("fig12.").unwrap();
        let k0 = text.find('\'').unwrap() + 1;
        let f = FixedLayout {
            table: Span {
                offset: t0,
                len: 6 + n,
            },
            key: Span { offset: k0, len: n },
        };
        let start = Instant::now();
        for _ in 0..iters {
            black_box(parse_statement(black_box(&text)));
        }
        let lex = start.elapsed().as_nanos() as f64 / iters as f64;
        let start = Instant::now();
        for _ in 0..iters {
            black_box(f.read(black_box(&text)));
        }
        let fixed = start.elapsed().as_nanos() as f64 / iters as f64;
        println!("{n}\t{lex:.0}\t{fixed:.0}\t{text}");
    }
}
