//! CQL: the first byte picks the direction and framing (bit 0: server side, bit 1: v5 segments),
//! the second where to split the rest into two pushes. Reassembly, request/RESULT decoding and
//! the statement lexer never panic; a decoded Rows result re-encodes to bytes that decode to
//! the same value, and the in-place cacheability check agrees with decode + re-encode; the
//! in-place EXECUTE reader judges every request body as the owning parser.
#![no_main]

use innet_wire::cql::{
    encode_rows, opcode, parse_execute_ref, parse_request, parse_result, rows_body_cacheable, rows_flags,
    FrameReader, Request, ResultMsg, Value, ValueRef,
};
use innet_wire::cql::key::{from_literal, KeyType};
use innet_wire::cql::statement::{parse_statement, KeyValue};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (mode, cut, rest) = (data[0], data[1] as usize, &data[2..]);
    if let Ok(s) = std::str::from_utf8(rest) {
        let _ = parse_statement(s);
        // Typed keys: any text as a literal of any type is a key or a refusal.
        let mut v = Vec::new();
        for t in KeyType::ALL {
            from_literal(t, &KeyValue::Text(s.to_string()), &mut v);
            from_literal(t, &KeyValue::Num(s.to_string()), &mut v);
        }
    }
    let mut r = FrameReader::new(mode & 1 != 0);
    if mode & 2 != 0 {
        r.set_segmented();
    }
    let cut = cut.min(rest.len());
    let mut frames = Vec::new();
    if r.push(&rest[..cut], &mut frames).is_ok() {
        let _ = r.push(&rest[cut..], &mut frames);
    }
    for f in frames {
        if f.header.is_response && f.header.opcode == opcode::RESULT {
            let mut cacheable = false;
            if let Ok(ResultMsg::Rows(rows)) = parse_result(f.header.version, &f.body) {
                let mut b = Vec::new();
                encode_rows(&rows, &mut b);
                cacheable = rows.rows.len() <= 1
                    && rows.metadata.flags & (rows_flags::HAS_MORE_PAGES | rows_flags::METADATA_CHANGED) == 0
                    && b == f.body;
                let again = parse_result(f.header.version, &b).expect("encoded rows decode");
                assert_eq!(again, ResultMsg::Rows(rows));
            }
            // The in-place check the switch uses judges every body as decode + re-encode.
            assert_eq!(rows_body_cacheable(&f.body), cacheable);
        } else {
            let req = parse_request(&f.header, &f.body);
            if f.header.opcode == opcode::EXECUTE {
                let want = (mode >> 2) as usize % 4;
                match (&req, parse_execute_ref(f.header.version, &f.body, Some(want))) {
                    (Ok(Request::Execute { id, result_metadata_id, params }), Ok(e)) => {
                        assert_eq!(e.id, id.as_slice());
                        assert_eq!(e.result_metadata_id, result_metadata_id.as_deref());
                        assert_eq!(e.flags, params.flags);
                        let v = params.values.get(want).map(|v| match v {
                            Value::Null => ValueRef::Null,
                            Value::Unset => ValueRef::Unset,
                            Value::Bytes(b) => ValueRef::Bytes(b),
                        });
                        assert_eq!(e.value, v);
                        assert_eq!(e.has_names, params.names.is_some());
                        assert_eq!(e.has_paging_state, params.paging_state.is_some());
                    }
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("parse_request {a:?} but parse_execute_ref {b:?}"),
                }
            }
            if let Ok(Request::Query { text, .. }) = req {
                let _ = parse_statement(&text);
            }
        }
    }
});
