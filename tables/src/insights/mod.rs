//! Contributor Insights (SPEC-3 §3): UpdateContributorInsights, DescribeContributorInsights,
//! ListContributorInsights, backed by real data ([`contributors`]): the partition keys and
//! items each table and GSI with insights enabled spends its capacity on and is throttled
//! on, readable through [`Database::contributors_report`] (the server's admin API and
//! /metrics).
//!
//! Settings live in the table's catalog definition (`TableSettings::contributor_insights`),
//! one entry per table or GSI ever configured, so they survive restarts and go away with the
//! table. ENABLE answers ENABLING and DISABLE DISABLING; the settled state (ENABLED,
//! DISABLED) follows after the transient-status delay (`-delayTransientStatuses`; at once
//! without it), as AWS's rules take a few seconds. The rules are named as DynamoDB names
//! them, `DynamoDBContributorInsights-<PKC|PKT|SKC|SKT>-<table>[-<index>]-<created ms>`.

pub mod contributors;

use std::sync::Arc;

use shoal_model::{ApiError, ErrorCode};

use crate::api::common::{name_in_table_member, table_name_of};
use crate::api::constraint::Violations;
use crate::api::insights::{
    ContributorInsightsSummary, DescribeContributorInsightsRequest,
    DescribeContributorInsightsResponse, ListContributorInsightsRequest,
    ListContributorInsightsResponse, UpdateContributorInsightsRequest,
    UpdateContributorInsightsResponse,
};
use crate::core::catalog::{IndexStatus, InsightsDef, TableDef};
use crate::core::clock::now_millis;
use crate::database::Database;
use crate::emulation::transient::TransientStatus;
use contributors::{Rule, RuleReport, ACCESSED_AND_THROTTLED_KEYS, THROTTLED_KEYS};

/// Entries per ListContributorInsights page, at most (the API model's bound).
pub const LIST_RESULTS_MAX: i64 = 100;

const ACTIONS: &[&str] = &["ENABLE", "DISABLE"];
const MODES: &[&str] = &[ACCESSED_AND_THROTTLED_KEYS, THROTTLED_KEYS];

/// The status of a table's or GSI's insights, now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Enabling,
    Enabled,
    Disabling,
    Disabled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Enabling => "ENABLING",
            Status::Enabled => "ENABLED",
            Status::Disabling => "DISABLING",
            Status::Disabled => "DISABLED",
        }
    }
}

impl Database {
    /// UpdateContributorInsights: enables or disables insights of a table or one of its GSIs.
    pub fn update_contributor_insights(
        &self,
        request: UpdateContributorInsightsRequest,
    ) -> Result<UpdateContributorInsightsResponse, ApiError> {
        let mut violations = Violations::default();
        violations.table_name(name_in_table_member(request.table_name.as_deref()));
        violations.index_name(request.index_name.as_deref());
        violations.not_null(
            "contributorInsightsAction",
            request.contributor_insights_action.is_some(),
        );
        violations.one_of(
            request.contributor_insights_action.as_deref(),
            "contributorInsightsAction",
            ACTIONS,
        );
        violations.one_of(
            request.contributor_insights_mode.as_deref(),
            "contributorInsightsMode",
            MODES,
        );
        violations.finish()?;
        let name = table_name_of(request.table_name.as_deref())?;
        let index = request.index_name.as_deref();
        let enable = request.contributor_insights_action.as_deref() == Some("ENABLE");

        let _change = self.catalog_change.lock();
        let table = self.insights_table(name, index)?;
        let current = definition_of(&table, index).cloned();
        let delay_millis = self.insights_delay_millis();
        let now = now_millis();
        let changed = if enable {
            self.check_active(&table, index)?;
            let mode = request
                .contributor_insights_mode
                .clone()
                .unwrap_or_else(|| ACCESSED_AND_THROTTLED_KEYS.to_string());
            match &current {
                // Already on in this mode: nothing changes, the answer echoes it.
                Some(on) if on.enabled && on.mode == mode => None,
                Some(on) if on.enabled => Some(InsightsDef {
                    mode,
                    changed_at_millis: now,
                    rules_created_at_millis: now,
                    ..on.clone()
                }),
                _ => Some(InsightsDef {
                    index: index.map(str::to_string),
                    enabled: true,
                    mode,
                    changed_at_millis: now,
                    rules_created_at_millis: now,
                }),
            }
        } else {
            match &current {
                Some(on) if on.enabled => Some(InsightsDef {
                    enabled: false,
                    changed_at_millis: now,
                    ..on.clone()
                }),
                _ => None,
            }
        };
        let answer = match &changed {
            Some(changed) => {
                let mut stored = TableDef::clone(&table);
                stored
                    .settings
                    .contributor_insights
                    .retain(|entry| entry.index.as_deref() != index);
                stored.settings.contributor_insights.push(changed.clone());
                self.store_definition(&stored)?;
                if !changed.enabled {
                    self.capacity.contributors.forget(&table, index);
                }
                self.recount_observing();
                UpdateContributorInsightsResponse {
                    table_name: table.name.clone(),
                    index_name: index.map(str::to_string),
                    contributor_insights_status: if changed.enabled {
                        Status::Enabling
                    } else {
                        Status::Disabling
                    }
                    .as_str()
                    .to_string(),
                    contributor_insights_mode: Some(changed.mode.clone()),
                }
            }
            None => UpdateContributorInsightsResponse {
                table_name: table.name.clone(),
                index_name: index.map(str::to_string),
                contributor_insights_status: status_of(current.as_ref(), delay_millis, now)
                    .as_str()
                    .to_string(),
                contributor_insights_mode: current.map(|entry| entry.mode),
            },
        };
        Ok(answer)
    }

    /// DescribeContributorInsights: a table's or GSI's status, mode and rule names.
    pub fn describe_contributor_insights(
        &self,
        request: DescribeContributorInsightsRequest,
    ) -> Result<DescribeContributorInsightsResponse, ApiError> {
        let mut violations = Violations::default();
        violations.table_name(name_in_table_member(request.table_name.as_deref()));
        violations.index_name(request.index_name.as_deref());
        violations.finish()?;
        let name = table_name_of(request.table_name.as_deref())?;
        let index = request.index_name.as_deref();
        let table = self.insights_table(name, index)?;
        let mut answer = DescribeContributorInsightsResponse {
            table_name: table.name.clone(),
            index_name: index.map(str::to_string),
            contributor_insights_status: Status::Disabled.as_str().to_string(),
            ..Default::default()
        };
        let Some(entry) = definition_of(&table, index) else {
            return Ok(answer);
        };
        let status = status_of(Some(entry), self.insights_delay_millis(), now_millis());
        answer.contributor_insights_status = status.as_str().to_string();
        answer.last_update_date_time = Some(entry.changed_at_millis as f64 / 1000.0);
        answer.contributor_insights_mode = Some(entry.mode.clone());
        if matches!(status, Status::Enabling | Status::Enabled) {
            answer.contributor_insights_rule_list = Some(rule_names(&table, entry));
        }
        Ok(answer)
    }

    /// ListContributorInsights: the tables and GSIs whose insights are not DISABLED, tables
    /// in name order, each before its GSIs. `NextToken` is the position of the next entry.
    pub fn list_contributor_insights(
        &self,
        request: ListContributorInsightsRequest,
    ) -> Result<ListContributorInsightsResponse, ApiError> {
        let mut violations = Violations::default();
        if let Some(name) = request.table_name.as_deref() {
            violations.table_name(name_in_table_member(Some(name)));
        }
        violations.within(request.max_results, "maxResults", 1, LIST_RESULTS_MAX);
        violations.finish()?;
        let tables: Vec<Arc<TableDef>> = match request.table_name.as_deref() {
            Some(name) => vec![self.insights_table(table_name_of(Some(name))?, None)?],
            None => self.catalog.read().values().cloned().collect(),
        };
        let delay_millis = self.insights_delay_millis();
        let now = now_millis();
        let mut summaries = Vec::new();
        for table in &tables {
            let mut entries: Vec<&InsightsDef> = table
                .settings
                .contributor_insights
                .iter()
                .filter(|entry| match &entry.index {
                    None => true,
                    Some(index) => table.global_indexes.iter().any(|gsi| &gsi.name == index),
                })
                .collect();
            entries.sort_by(|a, b| a.index.cmp(&b.index));
            for entry in entries {
                let status = status_of(Some(entry), delay_millis, now);
                if status != Status::Disabled {
                    summaries.push(ContributorInsightsSummary {
                        table_name: table.name.clone(),
                        index_name: entry.index.clone(),
                        contributor_insights_status: status.as_str().to_string(),
                        contributor_insights_mode: entry.mode.clone(),
                    });
                }
            }
        }
        let start = match request.next_token.as_deref() {
            None => 0,
            Some(token) => token
                .parse::<usize>()
                .map_err(|_| ApiError::validation(format!("Invalid NextToken: {token}")))?,
        };
        let page = request.max_results.unwrap_or(LIST_RESULTS_MAX) as usize;
        let end = start.saturating_add(page).min(summaries.len());
        let next_token = (end < summaries.len()).then(|| end.to_string());
        let contributor_insights_summaries = summaries
            .get(start.min(summaries.len())..end)
            .unwrap_or_default()
            .to_vec();
        Ok(ListContributorInsightsResponse {
            contributor_insights_summaries,
            next_token,
        })
    }

    /// The rankings of a table's (`index` None) or GSI's rules over the last `minutes`
    /// minutes, `top` keys each; None if the table or index does not exist. Rules that do
    /// not exist (insights off, the mode, no sort key) are left out.
    pub fn contributors_report(
        &self,
        table_name: &str,
        index: Option<&str>,
        minutes: u64,
        top: usize,
    ) -> Option<Vec<RuleReport>> {
        let table = self.insights_table(table_name, index).ok()?;
        let rules = match definition_of(&table, index) {
            Some(entry) if entry.enabled => existing_rules(&table, entry),
            _ => Vec::new(),
        };
        Some(
            self.capacity
                .contributors
                .report(&table, index, &rules, minutes, top),
        )
    }

    /// Every table and GSI with insights enabled: (table, index) in name order.
    pub fn contributors_followed(&self) -> Vec<(String, Option<String>)> {
        self.catalog
            .read()
            .values()
            .flat_map(|table| {
                table
                    .settings
                    .contributor_insights
                    .iter()
                    .filter(|entry| entry.enabled)
                    .map(|entry| (table.name.clone(), entry.index.clone()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Whether the capacity code must report requests to the counters: some table has
    /// insights enabled. Called at open and after every change.
    pub(crate) fn recount_observing(&self) {
        let any = self.catalog.read().values().any(|table| {
            table
                .settings
                .contributor_insights
                .iter()
                .any(|entry| entry.enabled)
        });
        self.capacity.contributors.set_observing(any);
    }

    fn insights_delay_millis(&self) -> u64 {
        self.emulation.transitions.delay().as_millis() as u64
    }

    /// The table, checking that `index` (if any) is one of its GSIs (an LSI is not).
    fn insights_table(&self, name: &str, index: Option<&str>) -> Result<Arc<TableDef>, ApiError> {
        let Some(table) = self.find_table(name) else {
            return Err(ApiError::new(
                ErrorCode::ResourceNotFoundException,
                format!("Requested resource not found: Table: {name} not found"),
            ));
        };
        if let Some(index) = index {
            if !table.global_indexes.iter().any(|gsi| gsi.name == index) {
                return Err(ApiError::new(
                    ErrorCode::ResourceNotFoundException,
                    format!(
                        "Requested resource not found: Index: {index} not found for table: {name}"
                    ),
                ));
            }
        }
        Ok(table)
    }

    /// ENABLE needs an ACTIVE table, and an ACTIVE GSI.
    fn check_active(&self, table: &TableDef, index: Option<&str>) -> Result<(), ApiError> {
        const NOT_VALID: &str =
            "Table or Index is not in a valid state to update Key Access Insights:";
        let transition = self.emulation.transitions.of(&table.catalog_key());
        if transition
            .as_ref()
            .is_some_and(|t| t.status != TransientStatus::Updating || index.is_none())
        {
            return Err(ApiError::validation(format!(
                "{NOT_VALID} TableStatus must be ACTIVE to enable ContributorInsights."
            )));
        }
        if let Some(index) = index {
            let creating = table
                .global_indexes
                .iter()
                .any(|gsi| gsi.name == index && !matches!(gsi.status, IndexStatus::Active))
                || transition.is_some_and(|t| t.creating_index.as_deref() == Some(index));
            if creating {
                return Err(ApiError::validation(format!(
                    "{NOT_VALID} IndexStatus must be ACTIVE to enable ContributorInsights."
                )));
            }
        }
        Ok(())
    }
}

fn definition_of<'t>(table: &'t TableDef, index: Option<&str>) -> Option<&'t InsightsDef> {
    table
        .settings
        .contributor_insights
        .iter()
        .find(|entry| entry.index.as_deref() == index)
}

/// The status now: ENABLING or DISABLING for the transient delay after a change.
fn status_of(entry: Option<&InsightsDef>, delay_millis: u64, now: u64) -> Status {
    let Some(entry) = entry else {
        return Status::Disabled;
    };
    let settling = now < entry.changed_at_millis.saturating_add(delay_millis);
    match (entry.enabled, settling) {
        (true, true) => Status::Enabling,
        (true, false) => Status::Enabled,
        (false, true) => Status::Disabling,
        (false, false) => Status::Disabled,
    }
}

/// Whether the table (`entry.index` None) or GSI has a sort key.
fn sorted(table: &TableDef, entry: &InsightsDef) -> bool {
    match &entry.index {
        None => table.key.range.is_some(),
        Some(index) => table
            .global_indexes
            .iter()
            .any(|gsi| &gsi.name == index && gsi.key.range.is_some()),
    }
}

fn existing_rules(table: &TableDef, entry: &InsightsDef) -> Vec<Rule> {
    let sorted = sorted(table, entry);
    let throttled_only = entry.mode == THROTTLED_KEYS;
    Rule::ALL
        .into_iter()
        .filter(|rule| rule.exists(sorted, throttled_only))
        .collect()
}

/// DynamoDB's rule names, in its list order (PKC, PKT, SKC, SKT).
fn rule_names(table: &TableDef, entry: &InsightsDef) -> Vec<String> {
    let resource = match &entry.index {
        None => table.name.clone(),
        Some(index) => format!("{}-{index}", table.name),
    };
    existing_rules(table, entry)
        .into_iter()
        .map(|rule| {
            format!(
                "DynamoDBContributorInsights-{}-{resource}-{}",
                rule.code(),
                entry.rules_created_at_millis
            )
        })
        .collect()
}
