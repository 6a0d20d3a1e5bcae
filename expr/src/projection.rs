//! ProjectionExpression / AttributesToGet: which paths of an item a read returns.

use std::collections::BTreeSet;
use std::fmt;

use shoal_model::Item;

use crate::ast::Path;
use crate::document::extract_paths;

/// A parsed, validated projection: a list of non-overlapping document paths.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    paths: Vec<Path>,
}

impl Projection {
    pub(crate) fn new(paths: Vec<Path>) -> Projection {
        Projection { paths }
    }

    pub fn paths(&self) -> &[Path] {
        &self.paths
    }

    /// The projected part of `item`; an item holding none of the paths projects to `{}`.
    ///
    /// Takes the item: a projection of top-level attributes only (the usual case) keeps
    /// them in place, with no copy. A Query profile showed copying the selected values into
    /// a new item costing more than decoding whole 1 KB items.
    pub fn apply(&self, mut item: Item) -> Item {
        let top_level_only = self.paths.iter().all(|path| path.elements().len() == 1);
        if top_level_only {
            item.retain(|name, _| self.paths.iter().any(|path| path.top_level_name() == name));
            return item;
        }
        extract_paths(&item, &self.paths)
    }

    /// The top-level attributes the projection reads (index projection checks).
    pub fn top_level_attributes(&self) -> BTreeSet<&str> {
        self.paths.iter().map(Path::top_level_name).collect()
    }
}

impl fmt::Display for Projection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, path) in self.paths.iter().enumerate() {
            if position > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{path}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use shoal_model::Item;

    use crate::test_support::{item, Maps};

    #[test]
    fn projects_nested_paths_and_skips_missing_ones() {
        let maps = Maps::new(r##"{"#n": "name"}"##, "");
        let projection = maps.projection("#n, m.x, l[2], l[0], gone").unwrap();
        let source = item(
            r#"{"name": {"S": "n"}, "m": {"M": {"x": {"N": "1"}, "y": {"N": "2"}}},
                "l": {"L": [{"S": "a"}, {"S": "b"}, {"S": "c"}]}, "other_attr": {"S": "o"}}"#,
        );
        assert_eq!(
            projection.apply(source.clone()),
            item(
                r#"{"name": {"S": "n"}, "m": {"M": {"x": {"N": "1"}}}, "l": {"L": [{"S": "a"}, {"S": "c"}]}}"#
            )
        );
        let names: Vec<&str> = projection.top_level_attributes().into_iter().collect();
        assert_eq!(names, vec!["gone", "l", "m", "name"]);
        assert_eq!(projection.apply(item(r#"{"z": {"S": "z"}}"#)), Item::new());
        let top_level = maps.projection("#n, gone, other_attr").unwrap();
        assert_eq!(
            top_level.apply(source.clone()),
            item(r#"{"name": {"S": "n"}, "other_attr": {"S": "o"}}"#)
        );
    }
}
