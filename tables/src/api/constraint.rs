//! DynamoDB's member-constraint texts (SPEC §7): each violated rule is one
//! `Value '<v>' at '<path>' failed to satisfy constraint: <rule>`, and a request's violations
//! are answered together as `N validation error(s) detected: a; b`. Every such text is built
//! here, so the envelope and the rules' wording cannot drift apart between operations.

use shoal_model::ApiError;

/// The rule a null (absent) required member breaks.
pub const NOT_NULL: &str = "Member must not be null";

/// The rule of a table or index name's characters.
pub const NAME_PATTERN: &str = "Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+";

/// The fewest bytes a table or index name has (SPEC §2.1).
pub const NAME_LENGTH_MIN: usize = 3;
/// The most bytes a table or index name has (SPEC §2.1).
pub const NAME_LENGTH_MAX: usize = 255;

/// One violation: `value` is the member's value as DynamoDB prints it (None prints `null`).
pub fn violation(value: Option<&str>, path: &str, rule: &str) -> String {
    match value {
        Some(value) => format!("Value '{value}' at '{path}' failed to satisfy constraint: {rule}"),
        None => format!("Value null at '{path}' failed to satisfy constraint: {rule}"),
    }
}

/// A violation that DynamoDB prints without the value (`Value at 'Limit' …`, SPEC §4.2; the
/// keys of a BatchGetItem table, SPEC §3.7).
pub fn violation_without_value(path: &str, rule: &str) -> String {
    format!("Value at '{path}' failed to satisfy constraint: {rule}")
}

pub fn length_at_least(min: impl std::fmt::Display) -> String {
    format!("Member must have length greater than or equal to {min}")
}

pub fn length_at_most(max: impl std::fmt::Display) -> String {
    format!("Member must have length less than or equal to {max}")
}

pub fn value_at_least(min: impl std::fmt::Display) -> String {
    format!("Member must have value greater than or equal to {min}")
}

pub fn value_at_most(max: impl std::fmt::Display) -> String {
    format!("Member must have value less than or equal to {max}")
}

pub fn enum_value_set(allowed: &[&str]) -> String {
    format!(
        "Member must satisfy enum value set: [{}]",
        allowed.join(", ")
    )
}

/// The violations of a table or index name: null, length (`model_length_min` is the
/// member's minimum in the API model: 3, or 1 where a table ARN may stand instead, as SPEC
/// reports `''` against 1 there; any shorter plain name still breaks the 3 of a name), and
/// characters.
pub fn name_violations(
    name: Option<&str>,
    path: &str,
    model_length_min: usize,
    problems: &mut Vec<String>,
) {
    let Some(name) = name else {
        problems.push(violation(None, path, NOT_NULL));
        return;
    };
    let length_min = if name.len() < model_length_min {
        model_length_min
    } else {
        NAME_LENGTH_MIN
    };
    if name.len() < length_min {
        problems.push(violation(Some(name), path, &length_at_least(length_min)));
    }
    if name.len() > NAME_LENGTH_MAX {
        problems.push(violation(
            Some(name),
            path,
            &length_at_most(NAME_LENGTH_MAX),
        ));
    }
    if !name.is_empty()
        && !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    {
        problems.push(violation(Some(name), path, NAME_PATTERN));
    }
}

/// Collects a request's violations, answered together as DynamoDB does.
#[derive(Debug, Default)]
pub struct Violations {
    problems: Vec<String>,
}

impl Violations {
    /// A TableName member where a table ARN may stand (see [`name_violations`]).
    pub fn table_name(&mut self, name: Option<&str>) {
        name_violations(name, "tableName", 1, &mut self.problems);
    }

    /// An IndexName member, when present (see [`name_violations`]).
    pub fn index_name(&mut self, name: Option<&str>) {
        if let Some(name) = name {
            name_violations(Some(name), "indexName", NAME_LENGTH_MIN, &mut self.problems);
        }
    }

    /// A whole-number member, when present, must lie within `min..=max`.
    pub fn within(&mut self, value: Option<i64>, path: &str, min: i64, max: i64) {
        match value {
            Some(v) if v < min => {
                self.push(violation(Some(&v.to_string()), path, &value_at_least(min)))
            }
            Some(v) if v > max => {
                self.push(violation(Some(&v.to_string()), path, &value_at_most(max)))
            }
            _ => {}
        }
    }

    pub fn not_null(&mut self, path: &str, present: bool) {
        if !present {
            self.push(violation(None, path, NOT_NULL));
        }
    }

    /// An enum-valued member, when present, must be one of `allowed`.
    pub fn one_of(&mut self, value: Option<&str>, path: &str, allowed: &[&str]) {
        if let Some(value) = value.filter(|v| !allowed.contains(v)) {
            self.push(violation(Some(value), path, &enum_value_set(allowed)));
        }
    }

    /// A violation built with [`violation`].
    pub fn push(&mut self, problem: String) {
        self.problems.push(problem);
    }

    pub fn is_empty(&self) -> bool {
        self.problems.is_empty()
    }

    /// All violations in one ValidationException, if there is any.
    pub fn finish(self) -> Result<(), ApiError> {
        check(&self.problems)
    }
}

/// DynamoDB's aggregated constraint message: `N validation error(s) detected: a; b`.
pub fn validation_errors(problems: &[String]) -> ApiError {
    let noun = if problems.len() == 1 {
        "error"
    } else {
        "errors"
    };
    ApiError::validation(format!(
        "{} validation {noun} detected: {}",
        problems.len(),
        problems.join("; ")
    ))
}

/// `Ok` when there is no violation, else all of them in one ValidationException.
pub fn check(problems: &[String]) -> Result<(), ApiError> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(validation_errors(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_violation_and_several() {
        assert_eq!(
            validation_errors(&[violation(Some("0"), "limit", &value_at_least(1))]).message,
            "1 validation error detected: Value '0' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1"
        );
        let mut problems = Vec::new();
        name_violations(Some("a!"), "tableName", 3, &mut problems);
        assert_eq!(
            validation_errors(&problems).message,
            "2 validation errors detected: Value 'a!' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3; Value 'a!' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+"
        );
    }

    #[test]
    fn names_where_an_arn_may_stand() {
        let problems = |name: &str| {
            let mut problems = Vec::new();
            name_violations(Some(name), "tableName", 1, &mut problems);
            problems
        };
        assert_eq!(
            problems(""),
            ["Value '' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 1"]
        );
        assert_eq!(
            problems("xx"),
            ["Value 'xx' at 'tableName' failed to satisfy constraint: Member must have length greater than or equal to 3"]
        );
        assert!(problems("Thread").is_empty());
    }
}
