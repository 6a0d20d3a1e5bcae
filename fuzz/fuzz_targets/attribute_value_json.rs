//! Decodes arbitrary bytes as a DynamoDB-JSON AttributeValue and item. Decoding must never
//! panic, and whatever it accepts must survive encode → decode unchanged, with its size and
//! limits computable.

#![no_main]

use libfuzzer_sys::fuzz_target;
use shoal_model::{
    check_item_limits, item_from_json, item_size_bytes, item_to_json, AttributeValue,
};

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Ok(value) = AttributeValue::from_json(&json) {
        let reencoded = value.to_json();
        let decoded = AttributeValue::from_json(&reencoded).expect("re-encoded value must decode");
        assert_eq!(decoded, value);
        let _ = value.size_bytes();
        let _ = value.nesting_depth();
    }
    if let Ok(item) = item_from_json(&json) {
        let decoded = item_from_json(&item_to_json(&item)).expect("re-encoded item must decode");
        assert_eq!(decoded, item);
        let _ = item_size_bytes(&item);
        let _ = check_item_limits(&item, false);
    }
});
