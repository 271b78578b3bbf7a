//! The direct `/mcp` route's header rules and JSON-RPC request parser: header lines, an empty
//! line, then the body.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wazap_gateway::fuzzing::direct_request(data));
