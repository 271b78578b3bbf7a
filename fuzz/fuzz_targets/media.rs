//! Strict base64, every media sniffer and the send_media / send_voice_note validation on
//! arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| wazap_gateway::fuzzing::media(data));
