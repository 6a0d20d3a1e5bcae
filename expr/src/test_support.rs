//! Helpers shared by the unit tests: values and items from DynamoDB JSON, and contexts.

use std::collections::BTreeMap;

use shoal_model::{ApiError, AttributeValue, Item};

use crate::ast::Condition;
use crate::context::{ConditionKind, Context};
use crate::projection::Projection;
use crate::update::Update;

/// A value from DynamoDB JSON text, e.g. `r#"{"N": "1"}"#`.
pub(crate) fn value(json: &str) -> AttributeValue {
    AttributeValue::from_json(&serde_json::from_str(json).unwrap()).unwrap()
}

/// An item from DynamoDB JSON text, e.g. `r#"{"a": {"S": "x"}}"#`.
pub(crate) fn item(json: &str) -> Item {
    shoal_model::item_from_json(&serde_json::from_str(json).unwrap()).unwrap()
}

/// Placeholder maps from JSON objects: names `{"#n": "name"}`, values `{":v": {"S": "x"}}`.
pub(crate) struct Maps {
    pub names: Option<BTreeMap<String, String>>,
    pub values: Option<BTreeMap<String, AttributeValue>>,
}

impl Maps {
    pub(crate) fn new(names: &str, values: &str) -> Maps {
        let names = (!names.is_empty()).then(|| serde_json::from_str(names).unwrap());
        let values = (!values.is_empty()).then(|| {
            let json: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(values).unwrap();
            json.iter()
                .map(|(key, json)| (key.clone(), AttributeValue::from_json(json).unwrap()))
                .collect()
        });
        Maps { names, values }
    }

    pub(crate) fn context(&self) -> Context<'_> {
        Context::new(self.names.as_ref(), self.values.as_ref()).unwrap()
    }

    pub(crate) fn condition(&self, text: &str) -> Result<Condition, ApiError> {
        self.context()
            .parse_condition(text, ConditionKind::Condition)
    }

    pub(crate) fn update(&self, text: &str) -> Result<Update, ApiError> {
        self.context().parse_update(text)
    }

    pub(crate) fn projection(&self, text: &str) -> Result<Projection, ApiError> {
        self.context().parse_projection(text)
    }
}

/// The message of an error result.
pub(crate) fn message<T: std::fmt::Debug>(result: Result<T, ApiError>) -> String {
    result.unwrap_err().message
}
