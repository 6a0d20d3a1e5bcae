//! Parser and validation tests: grammar, precedence, and DynamoDB's error texts.

use std::collections::BTreeMap;

use shoal_model::AttributeValue;

use crate::ast::{Comparator, Condition, Operand, PathElement};
use crate::context::{ConditionKind, Context};
use crate::test_support::{message, Maps};

fn maps() -> Maps {
    Maps::new(
        r##"{"#s": "status", "#n": "name"}"##,
        r#"{":v": {"N": "1"}, ":w": {"N": "2"}, ":s": {"S": "x"}, ":b": {"BOOL": true},
            ":t": {"S": "XX"}, ":l": {"L": []}, ":ss": {"SS": ["a"]}}"#,
    )
}

#[test]
fn empty_expressions_are_rejected_with_their_kind() {
    let maps = maps();
    assert_eq!(
        message(maps.condition("")),
        "Invalid ConditionExpression: The expression can not be empty;"
    );
    assert_eq!(
        message(maps.context().parse_condition("   ", ConditionKind::Filter)),
        "Invalid FilterExpression: The expression can not be empty;"
    );
    assert_eq!(
        message(maps.update("")),
        "Invalid UpdateExpression: The expression can not be empty;"
    );
    assert_eq!(
        message(maps.projection("")),
        "Invalid ProjectionExpression: The expression can not be empty;"
    );
}

#[test]
fn syntax_errors_name_the_token_and_its_neighbours() {
    let maps = maps();
    let cases = [
        ("a = = :v", "=", "= = :v"),
        ("a =", "<EOF>", "="),
        ("= a", "=", "= a"),
        ("first-name = :v", "-", "first-name"),
        ("a = :v b = :v", "b", ":v b ="),
        ("(a = :v", "<EOF>", ":v"),
        ("a = :v)", ")", ":v)"),
    ];
    for (text, token, near) in cases {
        assert_eq!(
            message(maps.condition(text)),
            format!(
                r#"Invalid ConditionExpression: Syntax error; token: "{token}", near: "{near}""#
            ),
            "{text}"
        );
    }
    assert_eq!(
        message(maps.update("SET a = :v &")),
        r#"Invalid UpdateExpression: Syntax error; token: "&", near: ":v &""#
    );
    assert_eq!(
        message(maps.update("PUT a = :v")),
        r#"Invalid UpdateExpression: Syntax error; token: "PUT", near: "PUT a""#
    );
    assert!(message(maps.projection("a[x]")).contains("Syntax error"));
    assert!(message(maps.projection("a, :v")).contains("Syntax error"));
    assert!(message(maps.condition("a[-1] = :v")).contains("Syntax error"));
    assert!(message(maps.condition("a IN ()")).contains("Syntax error"));
}

#[test]
fn names_must_start_with_a_letter() {
    let maps = maps();
    assert_eq!(
        message(maps.update("SET _a = :v")),
        r#"Invalid UpdateExpression: Syntax error; token: "_a", near: "SET _a =""#
    );
    assert_eq!(
        message(maps.condition("_f(a)")),
        r#"Invalid ConditionExpression: Syntax error; token: "_f", near: "_f(""#
    );
    assert_eq!(
        message(maps.condition("a._b = :v")),
        r#"Invalid ConditionExpression: Syntax error; token: "_b", near: "._b =""#
    );
    assert!(maps.condition("a_b.c_ = :v").is_ok());
    let underscores = Maps::new(r##"{"#_n": "_n"}"##, r#"{":_v": {"N": "1"}}"#);
    assert!(
        underscores.condition("#_n = :_v").is_ok(),
        "placeholders may"
    );
}

#[test]
fn syntax_errors_win_over_errors_found_earlier_in_the_text() {
    let maps = maps();
    assert!(message(maps.condition("status = :v AND")).contains("Syntax error"));
    assert!(message(maps.condition("#undefined = :v AND")).contains("Syntax error"));
}

#[test]
fn reserved_words_must_not_be_used_bare() {
    let maps = maps();
    assert_eq!(
        message(maps.condition("status = :v")),
        "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: status"
    );
    assert!(message(maps.update("SET a.Name = :v")).contains("reserved keyword: Name"));
    assert!(maps.condition("#s = :v").is_ok());
}

#[test]
fn undefined_placeholders_are_reported_with_the_expression_kind() {
    let maps = maps();
    assert_eq!(
        message(maps.context().parse_condition("#missing = :v", ConditionKind::Filter)),
        "Invalid FilterExpression: An expression attribute name used in the document path is not defined; attribute name: #missing"
    );
    assert_eq!(
        message(maps.update("SET a = :missing")),
        "Invalid UpdateExpression: An expression attribute value used in expression is not defined; attribute value: :missing"
    );
    let no_maps = Maps::new("", "");
    assert!(message(no_maps.condition("a = :v")).contains("attribute value: :v"));
}

#[test]
fn empty_maps_are_rejected() {
    let names = std::collections::BTreeMap::new();
    let values = std::collections::BTreeMap::new();
    assert_eq!(
        Context::new(Some(&names), None).unwrap_err().message,
        "ExpressionAttributeNames must not be empty"
    );
    assert_eq!(
        Context::new(None, Some(&values)).unwrap_err().message,
        "ExpressionAttributeValues must not be empty"
    );
}

#[test]
fn names_behind_placeholders_must_be_1_to_65535_bytes() {
    let with_name = |name: String| {
        let names = std::collections::BTreeMap::from([("#a".to_string(), name)]);
        Context::new(Some(&names), None).map(|_| ())
    };
    assert_eq!(
        with_name(String::new()).unwrap_err().message,
        "ExpressionAttributeNames contains invalid value: Empty attribute name for key #a"
    );
    assert_eq!(
        with_name("n".repeat(65_536)).unwrap_err().message,
        "ExpressionAttributeNames contains invalid value: Attribute name is too large, must be less than 65536 bytes for key #a"
    );
    assert!(with_name("n".repeat(65_535)).is_ok());
}

#[test]
fn unused_entries_are_checked_across_all_expressions_of_a_request() {
    let maps = Maps::new(
        r##"{"#a": "a", "#b": "b"}"##,
        r#"{":v": {"N": "1"}, ":w": {"N": "2"}, ":x": {"N": "3"}}"#,
    );
    let mut context = maps.context();
    context.parse_update("SET #a = :v").unwrap();
    context
        .parse_condition("#b = :w", ConditionKind::Condition)
        .unwrap();
    assert_eq!(
        context.finish().unwrap_err().message,
        "Value provided in ExpressionAttributeValues unused in expressions: keys: {:x}"
    );
    context.parse_projection("#a").unwrap();
    let mut context = maps.context();
    context.parse_update("SET a = :v, b = :w, c = :x").unwrap();
    assert_eq!(
        context.finish().unwrap_err().message,
        "Value provided in ExpressionAttributeNames unused in expressions: keys: {#a, #b}"
    );
    let mut context = maps.context();
    context
        .parse_update("SET #a = :v, #b = :w, c = :x")
        .unwrap();
    assert!(context.finish().is_ok());
}

#[test]
fn precedence_is_not_then_and_then_or() {
    let maps = maps();
    let parsed = maps.condition("a = :v OR b = :v AND c = :v").unwrap();
    let Condition::Or(_, right) = parsed else {
        panic!("OR must be the root: {parsed:?}");
    };
    assert!(matches!(*right, Condition::And(..)));

    let parsed = maps.condition("NOT a = :v AND b = :v").unwrap();
    let Condition::And(left, _) = parsed else {
        panic!("AND must be the root: {parsed:?}");
    };
    assert!(matches!(*left, Condition::Not(_)));

    let parsed = maps.condition("(a = :v OR b = :v) AND c = :v").unwrap();
    assert!(matches!(parsed, Condition::And(..)));
}

#[test]
fn keywords_are_case_insensitive_and_functions_case_sensitive() {
    let maps = maps();
    assert!(maps.condition("a between :v and :w").is_ok());
    assert!(maps.condition("not a in (:v, :w) or b = :v").is_ok());
    assert_eq!(
        message(maps.condition("SIZE(a) > :v")),
        "Invalid ConditionExpression: Invalid function name; function: SIZE"
    );
    assert!(maps.update("set a = :v remove b").is_ok());
}

#[test]
fn paths_parse_maps_lists_and_placeholders() {
    let maps = maps();
    let parsed = maps.condition("a.#s[3].c = :v").unwrap();
    let Condition::Compare {
        left: Operand::Path(path),
        comparator: Comparator::Eq,
        ..
    } = parsed
    else {
        panic!("unexpected tree");
    };
    assert_eq!(path.to_message_form(), "[a, status, [3], c]");
    assert!(matches!(path.elements()[2], PathElement::Index(3)));
    assert_eq!(path.to_string(), "a.#s[3].c");
}

#[test]
fn redundant_parentheses_are_rejected() {
    let maps = maps();
    assert_eq!(
        message(maps.condition("((a < :v))")),
        "Invalid ConditionExpression: The expression has redundant parentheses;"
    );
    assert!(maps.condition("(a < :v)").is_ok());
    assert!(maps.condition("(a < :v) AND (b < :v)").is_ok());
    assert!(maps.condition("((a < :v) AND b < :v)").is_ok());
    assert!(maps.condition("NOT (NOT (a < :v))").is_ok());
}

#[test]
fn in_accepts_at_most_100_operands() {
    let maps = maps();
    let list = |count: usize| vec![":v"; count].join(", ");
    assert!(maps.condition(&format!("a IN ({})", list(100))).is_ok());
    assert_eq!(
        message(maps.condition(&format!("a IN ({})", list(101)))),
        "Invalid ConditionExpression: The IN operator is provided with too many operands; number of operands: 101"
    );
}

#[test]
fn operator_count_and_size_are_limited() {
    let maps = maps();
    let comparisons = |count: usize| vec!["a = :v"; count].join(" AND ");
    // n comparisons joined by n - 1 ANDs: 2n - 1 operators.
    assert!(maps.condition(&comparisons(150)).is_ok());
    assert_eq!(
        message(maps.condition(&comparisons(151))),
        "Invalid ConditionExpression: The expression contains too many operators; operator count: 301"
    );
    let longest_name = "a".repeat(4091);
    assert!(
        maps.condition(&format!("{longest_name} = :v")).is_ok(),
        "4096 bytes"
    );
    let long_name = "a".repeat(4092);
    assert!(message(maps.condition(&format!("{long_name} = :v")))
        .contains("Expression size has exceeded the maximum allowed size; expression size: 4097"));
}

/// Runs `check` on a thread with the 2 MiB stack of a test or tokio thread, so a parser that
/// recursed without bound would overflow here whatever RUST_MIN_STACK says.
fn on_small_stack(check: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(check)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn nesting_is_limited_by_operators_not_by_depth() {
    on_small_stack(|| {
        let maps = maps();
        // 140 levels of one comparison and one AND each: 280 operators.
        let text = format!("{}a = :v{}", "(a = :v AND ".repeat(140), ")".repeat(140));
        assert!(maps.condition(&text).is_ok());
        let text = format!("{}a = :v{}", "(".repeat(200), ")".repeat(200));
        assert_eq!(
            message(maps.condition(&text)),
            "Invalid ConditionExpression: The expression has redundant parentheses;"
        );
        let text = format!("{}a = :v{}", "(".repeat(2040), ")".repeat(2040));
        assert_eq!(
            message(maps.condition(&text)),
            "Invalid ConditionExpression: The expression has redundant parentheses;"
        );
        let text = format!("{}a = :v", "(".repeat(4000));
        assert_eq!(
            message(maps.condition(&text)),
            r#"Invalid ConditionExpression: Syntax error; token: "<EOF>", near: ":v""#
        );
        let text = format!("{}a = :v", "NOT ".repeat(1000));
        assert_eq!(
            message(maps.condition(&text)),
            "Invalid ConditionExpression: The expression contains too many operators; operator count: 1001"
        );
        let text = format!("{}a = :v{}", "NOT (".repeat(320), ")".repeat(320));
        assert_eq!(
            message(maps.condition(&text)),
            "Invalid ConditionExpression: The expression contains too many operators; operator count: 321"
        );
        let text = format!(
            "{}a BETWEEN :v AND :w{}",
            "NOT (".repeat(320),
            ")".repeat(320)
        );
        assert_eq!(
            message(maps.condition(&text)),
            "Invalid ConditionExpression: The expression contains too many operators; operator count: 321"
        );
        // 200 nested functions.
        let text = format!(
            "SET a = {}:l{}",
            "if_not_exists(a, ".repeat(200),
            ")".repeat(200)
        );
        assert!(maps.update(&text).is_ok());
        let text = format!("{}a = :v{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(message(maps.condition(&text))
            .contains("Expression size has exceeded the maximum allowed size"));
    });
}

#[test]
fn functions_are_checked_for_place_arity_and_operand_types() {
    let maps = maps();
    assert_eq!(
        message(maps.condition("size(a)")),
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: size"
    );
    assert_eq!(
        message(maps.condition("attribute_exists(a) < :v")),
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: attribute_exists"
    );
    assert_eq!(
        message(maps.condition("begins_with(a)")),
        "Invalid ConditionExpression: Incorrect number of operands for operator or function; operator or function: begins_with, number of operands: 1"
    );
    assert_eq!(
        message(maps.condition("attribute_exists(:v)")),
        "Invalid ConditionExpression: Operator or function requires a document path; operator or function: attribute_exists"
    );
    assert_eq!(
        message(maps.condition("attribute_type(a, :t)")),
        "Invalid ConditionExpression: Invalid attribute type name found; type: XX, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"
    );
    assert_eq!(
        message(maps.condition("contains(a, a)")),
        "Invalid ConditionExpression: The first operand must be distinct from the remaining operands for this operator or function; operator: contains, first operand: [a]"
    );
    assert_eq!(
        message(maps.condition("begins_with(a, :v)")),
        "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"
    );
    assert_eq!(
        message(maps.condition("a < :b")),
        "Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: <, operand type: BOOL"
    );
    assert_eq!(
        message(maps.condition("list_append(a, :l) = :v")),
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: list_append"
    );
    assert_eq!(
        message(maps.condition("foo(a)")),
        "Invalid ConditionExpression: Invalid function name; function: foo"
    );
    assert!(
        maps.condition("a = :b").is_ok(),
        "equality accepts any type"
    );
    assert!(maps.condition("size(a) > :v AND contains(a, :s)").is_ok());
}

#[test]
fn size_and_attribute_type_take_a_value_as_well_as_a_path() {
    let maps = Maps::new(
        "",
        r#"{":s": {"S": "abc"}, ":n": {"N": "2"}, ":t": {"S": "S"}, ":tn": {"S": "N"}}"#,
    );
    let empty = shoal_model::Item::new();
    assert!(maps.condition("size(:s) > :n").unwrap().evaluate(&empty));
    assert!(!maps.condition("size(:s) < :n").unwrap().evaluate(&empty));
    assert!(maps
        .condition("attribute_type(:s, :t)")
        .unwrap()
        .evaluate(&empty));
    assert!(!maps
        .condition("attribute_type(:s, :tn)")
        .unwrap()
        .evaluate(&empty));
    assert_eq!(
        message(maps.condition("size(size(a)) > :n")),
        "Invalid ConditionExpression: Operator or function requires a document path; operator or function: size"
    );
    let printed = maps
        .condition("size(:s) > :n AND attribute_type(:s, :t)")
        .unwrap();
    assert_eq!(
        printed.to_string(),
        "size(:s) > :n AND attribute_type(:s, :t)"
    );
}

#[test]
fn between_bounds_must_be_ordered_and_of_one_type() {
    let maps = maps();
    assert_eq!(
        message(maps.condition("a BETWEEN :w AND :v")),
        "Invalid ConditionExpression: The BETWEEN condition was provided a range where the lower bound is greater than the upper bound"
    );
    assert!(maps.condition("a BETWEEN :v AND :w").is_ok());
    assert!(maps.condition("a BETWEEN :v AND :v").is_ok());
    assert_eq!(
        message(maps.condition("a BETWEEN :v AND :s")),
        "Invalid ConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:x}"
    );
    assert!(
        maps.condition("a BETWEEN b AND :s").is_ok(),
        "a path bound has no type until evaluation"
    );
}

#[test]
fn update_sections_may_appear_once_in_any_order() {
    let maps = maps();
    let update = maps
        .update("REMOVE b ADD c :v SET a = :v DELETE d :ss")
        .unwrap();
    let sections: Vec<&str> = update.actions().iter().map(|a| a.section()).collect();
    assert_eq!(sections, vec!["REMOVE", "ADD", "SET", "DELETE"]);
    assert_eq!(
        message(maps.update("SET a = :v SET b = :v")),
        r#"Invalid UpdateExpression: The "SET" section can only be used once in an update expression;"#
    );
}

#[test]
fn update_paths_must_not_overlap_or_conflict() {
    let maps = maps();
    assert_eq!(
        message(maps.update("SET a = :v REMOVE a")),
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"
    );
    assert_eq!(
        message(maps.update("SET a.b = :v, a.b.c = :v")),
        "Invalid UpdateExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a, b, c]"
    );
    assert_eq!(
        message(maps.update("SET a.b = :v REMOVE a[0]")),
        "Invalid UpdateExpression: Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a, [0]]"
    );
    assert!(maps
        .update("SET a.b = :v, a.c = :v REMOVE a.d[1], a.d[2]")
        .is_ok());
    assert!(
        maps.update("SET a = a + :v").is_ok(),
        "reading a path being set is fine"
    );
}

#[test]
fn update_operand_types_are_checked() {
    let maps = maps();
    assert_eq!(
        message(maps.update("SET a = :s + :v")),
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: +, operand type: S"
    );
    assert_eq!(
        message(maps.update("SET a = list_append(:s, b)")),
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator or function: list_append, operand type: S"
    );
    assert_eq!(
        message(maps.update("ADD a :s")),
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: ADD, operand type: S"
    );
    assert_eq!(
        message(maps.update("DELETE a :v")),
        "Invalid UpdateExpression: Incorrect operand type for operator or function; operator: DELETE, operand type: N"
    );
    assert_eq!(
        message(maps.update("SET a = size(b)")),
        "Invalid UpdateExpression: The function is not allowed in an update expression; function: size"
    );
    assert_eq!(
        message(maps.update("SET a = if_not_exists(:v, :v)")),
        "Invalid UpdateExpression: Operator or function requires a document path; operator or function: if_not_exists"
    );
    assert!(message(maps.update("ADD a b")).contains("Syntax error"));
    assert!(maps
        .update("SET a = list_append(if_not_exists(a, :l), :l), b = if_not_exists(b, :v) - :w")
        .is_ok());
}

#[test]
fn projections_reject_overlaps_and_deep_paths() {
    let maps = maps();
    assert_eq!(
        message(maps.projection("a, a.b")),
        "Invalid ProjectionExpression: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]"
    );
    let depth_32 = vec!["m"; 32].join(".");
    assert!(maps.projection(&depth_32).is_ok());
    let depth_33 = vec!["m"; 33].join(".");
    assert_eq!(
        message(maps.projection(&depth_33)),
        "Invalid ProjectionExpression: The document path has too many nesting levels; nesting levels: 33"
    );
    assert!(message(maps.projection("name")).contains("reserved keyword: name"));
    assert!(maps.projection("#n, a[0].b, c").is_ok());
}

#[test]
fn printing_gives_text_that_parses_to_the_same_tree() {
    let maps = maps();
    let conditions = [
        "a = :v OR b = :v AND c = :v",
        "(a = :v OR b = :v) AND NOT (c = :v AND d <> :w)",
        "a = :v AND (b = :v AND c = :v)",
        "NOT NOT attribute_exists(#s.x[2])",
        "size(a) BETWEEN :v AND :w OR a IN (:v, :w, b.c)",
        "begins_with(a, :s) AND contains(#n, :s) AND attribute_type(q, :t2)",
    ];
    let maps = Maps {
        values: maps.values.clone().map(|mut values| {
            values.insert(
                ":t2".to_string(),
                crate::test_support::value(r#"{"S": "SS"}"#),
            );
            values
        }),
        ..maps
    };
    for text in conditions {
        let parsed = maps.condition(text).unwrap();
        let printed = parsed.to_string();
        let reparsed = maps
            .condition(&printed)
            .unwrap_or_else(|error| panic!("{printed}: {error}"));
        assert_eq!(parsed, reparsed, "{text} printed as {printed}");
    }
    let update = maps
        .update("SET a = a + :v, b = list_append(:l, b) REMOVE c[1] ADD d :v DELETE e :ss")
        .unwrap();
    assert_eq!(
        update.to_string(),
        "SET a = a + :v, b = list_append(:l, b) REMOVE c[1] ADD d :v DELETE e :ss"
    );
    assert_eq!(
        maps.projection("#n,a[0].b").unwrap().to_string(),
        "#n, a[0].b"
    );
}

#[test]
fn in_lists_may_mix_types_where_between_may_not() {
    let maps = maps();
    // Each listed value is compared in turn; one of another type just does not match.
    let condition = maps.condition("a IN (:s, :v, :b)").unwrap();
    let item_with = |value: &str| crate::test_support::item(&format!(r#"{{"a": {value}}}"#));
    assert!(condition.evaluate(&item_with(r#"{"N": "1"}"#)));
    assert!(condition.evaluate(&item_with(r#"{"S": "x"}"#)));
    assert!(!condition.evaluate(&item_with(r#"{"N": "2"}"#)));
    assert!(!condition.evaluate(&item_with(r#"{"S": "1"}"#)));
    // BETWEEN's bounds must still be of one type (the grammar compares them to each other).
    assert_eq!(
        message(maps.condition("a BETWEEN :v AND :s")),
        "Invalid ConditionExpression: The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:x}"
    );
}

#[test]
fn size_of_a_value_without_a_size_is_refused_and_of_such_an_attribute_is_false() {
    let maps = Maps::new(
        "",
        r#"{":n": {"N": "2"}, ":b": {"BOOL": true}, ":z": {"NULL": true}, ":s": {"S": "ab"}}"#,
    );
    for (operand, type_name) in [(":n", "N"), (":b", "BOOL"), (":z", "NULL")] {
        for expression in [
            format!("size({operand}) > :n"),
            format!(":n < size({operand})"),
            format!("size({operand}) BETWEEN :n AND :n"),
            format!("a IN (:n, size({operand}))"),
        ] {
            assert_eq!(
                message(maps.condition(&expression)),
                format!("Invalid ConditionExpression: Incorrect operand type for operator or function; operator or function: size, operand type: {type_name}"),
                "{expression}"
            );
        }
    }
    // A value that has a size is fine; an attribute without one only fails the comparison.
    let number = crate::test_support::item(r#"{"a": {"N": "5"}}"#);
    assert!(maps.condition("size(:s) = :n").unwrap().evaluate(&number));
    for expression in ["size(a) > :n", "size(a) < :n", "size(a) = :n"] {
        assert!(
            !maps.condition(expression).unwrap().evaluate(&number),
            "{expression}"
        );
    }
}

#[test]
fn list_append_may_not_sit_inside_a_function_and_if_not_exists_may() {
    let values = BTreeMap::from([
        (":l".to_string(), AttributeValue::L(vec![])),
        (
            ":v".to_string(),
            AttributeValue::N(shoal_model::Number::from_i64(1)),
        ),
    ]);
    for expression in [
        "SET a = list_append(list_append(a, :l), :l)",
        "SET a = list_append(:l, list_append(a, :l))",
        "SET a = if_not_exists(a, list_append(:l, :l))",
        "SET a = if_not_exists(a, if_not_exists(b, list_append(:l, :l)))",
    ] {
        let mut context = Context::new(None, Some(&values)).unwrap();
        assert_eq!(
            context.parse_update(expression).unwrap_err().message,
            "Invalid UpdateExpression: The function is not allowed to be used this way in an expression; function: list_append",
            "{expression}"
        );
    }
    let empty = shoal_model::Item::new();
    for (expression, stored) in [
        (
            "SET a = list_append(if_not_exists(a, :l), :l)",
            r#"{"L": []}"#,
        ),
        (
            "SET a = if_not_exists(b, if_not_exists(c, :v))",
            r#"{"N": "1"}"#,
        ),
        (
            "SET a = if_not_exists(a, if_not_exists(a, :v))",
            r#"{"N": "1"}"#,
        ),
    ] {
        let mut context = Context::new(None, Some(&values)).unwrap();
        let update = context
            .parse_update(expression)
            .unwrap_or_else(|error| panic!("{expression}: {error}"));
        let outcome = update.apply(&empty).unwrap();
        assert_eq!(
            outcome.item.get("a"),
            Some(&crate::test_support::value(stored)),
            "{expression}"
        );
    }
}

#[test]
fn operands_may_be_parenthesized_once() {
    let maps = Maps::new(
        "",
        r#"{":v": {"N": "2"}, ":x": {"N": "1"}, ":y": {"N": "9"}, ":p": {"S": "h"}}"#,
    );
    let stored = crate::test_support::item(r#"{"a": {"N": "2"}, "b": {"S": "hi"}}"#);
    for expression in [
        "(size(b)) = :v",
        "(a) BETWEEN :x AND :y",
        "a BETWEEN (:x) AND (:y)",
        "(a) = :v",
        "a = (:v)",
        ":v = (a)",
        "(a) IN (:x, (:v))",
        "begins_with((b), (:p))",
        "size((b)) = :v",
        "((a) = :v)",
        "(a) = :v AND (b) <> :p",
        "NOT (a) < :x",
        "(a) < (size(b)) OR (a) = :v",
    ] {
        let condition = maps
            .condition(expression)
            .unwrap_or_else(|error| panic!("{expression}: {error}"));
        assert!(condition.evaluate(&stored), "{expression}");
    }
    // A second pair is redundant, and a function that is no operand stays refused inside
    // parentheses.
    for expression in ["((a)) = :v", "(((a))) = :v", "a = ((:v))", "((a = :v))"] {
        assert_eq!(
            message(maps.condition(expression)),
            "Invalid ConditionExpression: The expression has redundant parentheses;",
            "{expression}"
        );
    }
    assert_eq!(
        message(maps.condition("(size(b))")),
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: size"
    );
    assert_eq!(
        message(maps.condition("(attribute_exists(a)) = :v")),
        "Invalid ConditionExpression: The function is not allowed to be used this way in an expression; function: attribute_exists"
    );
    assert!(
        maps.condition("(a)").is_err(),
        "an operand alone is no condition"
    );
    // SET takes parenthesized operands and a parenthesized sum.
    for (expression, expected) in [
        ("SET c = (a)", r#"{"N": "2"}"#),
        ("SET c = (a) + (:x)", r#"{"N": "3"}"#),
        ("SET c = (a - :x)", r#"{"N": "1"}"#),
        ("SET c = if_not_exists((d), (:v))", r#"{"N": "2"}"#),
    ] {
        let update = maps
            .update(expression)
            .unwrap_or_else(|error| panic!("{expression}: {error}"));
        assert_eq!(
            update.apply(&stored).unwrap().item.get("c"),
            Some(&crate::test_support::value(expected)),
            "{expression}"
        );
    }
    assert_eq!(
        message(maps.update("SET c = ((a))")),
        "Invalid UpdateExpression: The expression has redundant parentheses;"
    );
    // Projections take no parentheses.
    assert!(maps.projection("(a)").is_err());
}

#[test]
fn list_indexes_past_a_java_int_are_out_of_range() {
    let mut context = Context::new(None, None).unwrap();
    context.parse_projection("a[2147483647]").unwrap();
    for expression in ["a[2147483648]", "a.b[99999999999999999999]"] {
        let mut context = Context::new(None, None).unwrap();
        assert_eq!(
            context.parse_projection(expression).unwrap_err().message,
            "Invalid ProjectionExpression: List index is not within the allowable range",
            "{expression}"
        );
    }
}
