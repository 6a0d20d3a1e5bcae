//! The parser against SPEC-2 §3.2's grammar and §3.3's texts.

use shoal_model::{AttributeValue, ErrorCode, Number};

use super::*;
use crate::ast::PathElement;

fn error_of(statement: &str) -> String {
    match parse_statement(statement) {
        Ok(parsed) => panic!("{statement:?} parsed: {parsed:?}"),
        Err(error) => {
            assert_eq!(error.code, ErrorCode::ValidationException, "{statement}");
            error.message
        }
    }
}

fn nwf(detail: &str) -> String {
    format!("{NOT_WELL_FORMED}{detail}")
}

fn select(statement: &str) -> Select {
    match parse_statement(statement) {
        Ok(Statement::Select(select)) => select,
        other => panic!("{statement:?}: {other:?}"),
    }
}

/// The refusal of a statement that parses with a function in its projection.
fn projection_refusal(statement: &str) -> String {
    match select(statement).refuse_function_in_projection() {
        Ok(()) => panic!("{statement:?} has no function in its projection"),
        Err(error) => error.message,
    }
}

fn names(path: &crate::ast::Path) -> Vec<String> {
    path.elements()
        .iter()
        .map(|e| match e {
            PathElement::Attribute { name, .. } => name.clone(),
            PathElement::Index(i) => format!("[{i}]"),
        })
        .collect()
}

#[test]
fn select_reads_table_index_projection_condition_and_order() {
    let s = select(
        r#"select a, "b-c".d[2], m['k'] FROM "Music"."ByYear" WHERE Artist = 'Ada' AND y > 3 ORDER BY y DESC"#,
    );
    assert_eq!(s.target.table, "Music");
    assert_eq!(s.target.index.as_deref(), Some("ByYear"));
    let projection = s.projection.unwrap();
    assert_eq!(names(&projection[0]), ["a"]);
    assert_eq!(names(&projection[1]), ["b-c", "d", "[2]"]);
    assert_eq!(names(&projection[2]), ["m", "k"]);
    assert!(matches!(s.condition, Some(Node::And(..))));
    assert_eq!(s.order_by.len(), 1);
    assert!(s.order_by[0].descending);
}

#[test]
fn quoted_text_and_columns_count_characters() {
    let s = select(r#"SELECT * FROM "t""x" WHERE "é" = 'it''s'"#);
    assert_eq!(s.target.table, "t\"x");
    assert_eq!(
        format!("{:?}", s.condition.unwrap()),
        format!(
            "{:?}",
            select(r#"SELECT * FROM t WHERE "é" = 'it''s'"#)
                .condition
                .unwrap()
        )
    );
    // Columns count characters, not bytes.
    assert_eq!(
        projection_refusal(r#"SELECT "é", size(a) FROM t"#),
        "Unexpected path component at 1:13:4"
    );
}

#[test]
fn literals_of_every_type() {
    let s = select(
        "SELECT * FROM t WHERE a = {'s': 'x''y', 'n': -2.5e1, 'b': TRUE, 'z': NULL, 'l': [1, 'two'], 'ss': <<'a', 'b'>>, 'p': ?}",
    );
    let Some(Node::Binary { right, .. }) = s.condition else {
        panic!()
    };
    let Node::Map(entries) = *right else { panic!() };
    assert_eq!(entries[0].1, Node::Literal(AttributeValue::S("x'y".into())));
    assert_eq!(
        entries[1].1,
        Node::Literal(AttributeValue::N(Number::parse("-25").unwrap()))
    );
    assert_eq!(entries[2].1, Node::Literal(AttributeValue::Bool(true)));
    assert_eq!(entries[3].1, Node::Literal(AttributeValue::Null));
    assert!(matches!(&entries[4].1, Node::List(l) if l.len() == 2));
    assert!(matches!(&entries[5].1, Node::Bag(m, _) if m.len() == 2));
    assert_eq!(entries[6].1, Node::Parameter(0));
}

#[test]
fn parameters_are_numbered_in_order() {
    let s = select("SELECT * FROM t WHERE a = ? AND b BETWEEN ? AND ?");
    let text = format!("{:?}", s.condition);
    assert!(text.contains("Parameter(0)") && text.contains("Parameter(2)"));
    let (_, count) =
        parse_with_parameter_count("SELECT * FROM t WHERE a = ? AND b = '?' AND c = ?").unwrap();
    assert_eq!(count, 2);
}

#[test]
fn dml_statements() {
    let Ok(Statement::Insert(insert)) = parse_statement("INSERT INTO \"T\" VALUE {'pk': 1}") else {
        panic!()
    };
    assert_eq!(insert.table, "T");
    let Ok(Statement::Update(update)) = parse_statement(
        "UPDATE T SET a = a + 1, l = list_append(l, [1]) SET s = set_add(s, <<'x'>>) REMOVE b WHERE pk = 1 RETURNING ALL NEW *",
    ) else {
        panic!()
    };
    assert_eq!(update.actions.len(), 4);
    assert!(matches!(update.actions[3], Action::Remove(_)));
    assert_eq!(update.returning, Some(Returning::AllNew));
    let Ok(Statement::Update(from_first)) = parse_statement("FROM T WHERE pk = 1 SET a = 2") else {
        panic!()
    };
    assert_eq!(from_first.table, "T");
    let Ok(Statement::Delete(delete)) =
        parse_statement("delete from T where pk = 1 returning all old *")
    else {
        panic!()
    };
    assert_eq!(delete.returning, Some(Returning::AllOld));
    assert!(matches!(
        parse_statement("EXISTS(SELECT * FROM T WHERE pk = 1 AND a = 2)"),
        Ok(Statement::Exists(_))
    ));
}

#[test]
fn predicates() {
    for (statement, check) in [
        ("SELECT * FROM t WHERE a NOT BETWEEN 1 AND 2", "Between"),
        ("SELECT * FROM t WHERE a IN [1, 2]", "In"),
        ("SELECT * FROM t WHERE a NOT IN (1, 2)", "In"),
        ("SELECT * FROM t WHERE a IS NOT MISSING", "Is"),
        ("SELECT * FROM t WHERE a IS BOOL", "Is"),
        ("SELECT * FROM t WHERE NOT (a = 1 OR b <> 2)", "Not"),
        ("SELECT * FROM t WHERE begins_with(a, 'x')", "Call"),
        ("SELECT * FROM t WHERE attribute_exists(a) = true", "Binary"),
        ("SELECT * FROM t WHERE size(a) >= 3", "Binary"),
    ] {
        let text = format!("{:?}", select(statement).condition);
        assert!(
            text.starts_with(&format!("Some({check}")),
            "{statement}: {text}"
        );
    }
}

#[test]
fn spec_texts_for_malformed_statements() {
    let unexpected_after = nwf("Unexpected token after expression");
    for statement in [
        "SELECT * FROM t WHERE pk = 1 foo",
        "SELECT * FROM t WHERE pk = 1 e5",
        "SELECT * FROM t WHERE pk = 1)",
        "DELETE FROM t WHERE pk = 1 ORDER BY pk",
        "SELECT * FROM t ORDER BY pk WHERE pk = 1",
    ] {
        assert_eq!(error_of(statement), unexpected_after, "{statement}");
    }
    for statement in [
        "SELECT * FROM t WHERE pk = 1e2147483648",
        "SELECT * FROM t # comment",
        "SELECT * FROM t /* open",
        "SELECT * FROM t WHERE a = 'open",
    ] {
        assert_eq!(error_of(statement), nwf(""), "{statement}");
    }
    for statement in [
        "SELECT * FROM t WHERE",
        "SELECT * FROM t WHERE;",
        "SELECT * FROM t WHERE NOT",
        "SELECT * FROM t WHERE (",
        "SELECT * FROM",
    ] {
        assert_eq!(error_of(statement), nwf("Unexpected term"), "{statement}");
    }
    for statement in [
        "SELECT * FROM t WHERE a = 1 AND",
        "SELECT * FROM t WHERE a = 1 OR",
    ] {
        assert_eq!(
            error_of(statement),
            nwf("Missing right-hand side expression of infix operator")
        );
    }
    assert_eq!(
        error_of("SELECT * FROM t WHERE ORDER BY pk"),
        nwf("Unexpected keyword")
    );
    assert_eq!(
        error_of("DELETE FROM"),
        nwf("Expected identifier for simple path")
    );
    assert_eq!(
        error_of("SELECT * FROM t WHERE x IS FOO"),
        nwf("Expected type name")
    );
    assert_eq!(
        error_of("SELECT * FROM t WHERE IS NULL"),
        nwf("Unexpected operator")
    );
    assert_eq!(
        error_of("SELECT * FROM t WHERE pk = LIKE"),
        nwf("Unexpected operator")
    );
    assert_eq!(
        error_of("SELECT * FROM t WHERE a.inner = 1"),
        nwf("Invalid path dot component")
    );
    assert_eq!(
        error_of("SELECTT * FROM t"),
        nwf("Expected data manipulation")
    );
    for statement in [
        r#"SELECT * FROM "T" t"#,
        r#"SELECT * FROM "T" AS t WHERE pk = 1"#,
        "UPDATE T t SET a = 1 WHERE pk = 1",
        "DELETE FROM T AS t WHERE pk = 1",
    ] {
        assert_eq!(
            error_of(statement),
            "Aliasing is not supported",
            "{statement}"
        );
    }
    assert_eq!(error_of("x IS INT4"), "Unsupported operation: IsType");
    assert_eq!(
        projection_refusal("SELECT size(a) FROM t"),
        "Unexpected path component at 1:8:4"
    );
}

#[test]
fn aggregates_in_a_projection_parse_and_are_refused_as_path_components() {
    // SPEC-2 §3.3's text for a function in a projection; DynamoDB answers the same for
    // COUNT(*) and the other aggregates, at the aggregate's column and length. The statement
    // parses (the refusal waits for the table, SPEC-3 §1.5) and keeps only real paths.
    for (statement, position) in [
        ("SELECT COUNT(*) FROM t", "1:8:5"),
        ("SELECT count(*) FROM t", "1:8:5"),
        (r#"SELECT COUNT(pk) FROM "t" WHERE pk = 1"#, "1:8:5"),
        ("SELECT SUM(n) FROM t", "1:8:3"),
        ("SELECT AVG(n) FROM t", "1:8:3"),
        ("SELECT MIN(n), MAX(n) FROM t", "1:8:3"),
        ("SELECT pk, COUNT(*) FROM t", "1:12:5"),
    ] {
        assert_eq!(
            projection_refusal(statement),
            format!("Unexpected path component at {position}"),
            "{statement}"
        );
    }
    let mixed = select("SELECT pk, COUNT(*), sk FROM t");
    let kept: Vec<Vec<String>> = mixed.projection.iter().flatten().map(names).collect();
    assert_eq!(kept, [vec!["pk".to_string()], vec!["sk".to_string()]]);
    // The whole statement is read first: an alias or a syntax error after it wins.
    assert_eq!(
        error_of(r#"SELECT COUNT(*) FROM "t" t"#),
        "Aliasing is not supported"
    );
    assert_eq!(
        error_of("SELECT COUNT(*) FROM t WHERE"),
        nwf("Unexpected term")
    );
    assert_eq!(
        error_of("SELECT COUNT(*) FROM t WHERE pk = 1 foo"),
        nwf("Unexpected token after expression")
    );
    // The neighbours: a quoted name that reads like an aggregate is a plain attribute, and
    // `*` and plain paths are no function.
    for statement in [
        r#"SELECT "COUNT" FROM t"#,
        "SELECT * FROM t",
        "SELECT a, b.c FROM t",
    ] {
        let parsed = select(statement);
        assert_eq!(parsed.function_in_projection, None, "{statement}");
        assert!(
            parsed.refuse_function_in_projection().is_ok(),
            "{statement}"
        );
    }
}

#[test]
fn number_literals_name_where_they_sit() {
    let message = error_of("INSERT INTO t VALUE {'pk': 1, 'x': 1e999}");
    assert!(message.starts_with("Number overflow"), "{message}");
    assert!(message.ends_with(" under root.x"), "{message}");
    let message = error_of(
        "INSERT INTO t VALUE {'pk': 1, 'l': [1, 123456789012345678901234567890123456789]}",
    );
    assert!(message.ends_with(" under root.l[1]"), "{message}");
}

#[test]
fn deep_nesting_is_refused_not_a_stack_overflow() {
    for depth in [200, 100_000] {
        let statement = format!(
            "SELECT * FROM t WHERE {}a = 1{}",
            "(".repeat(depth),
            ")".repeat(depth)
        );
        let message = error_of(&statement);
        assert!(message.starts_with(NOT_WELL_FORMED), "{message}");
    }
    let statement = format!(
        "SELECT * FROM t WHERE a = {}1{}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    error_of(&statement);
    let statement = format!("SELECT * FROM t WHERE {}a = 1", "NOT ".repeat(10_000));
    error_of(&statement);
}

#[test]
fn shallow_nesting_parses() {
    let statement = format!(
        "SELECT * FROM t WHERE {}a = 1{}",
        "(".repeat(30),
        ")".repeat(30)
    );
    select(&statement);
}
