//! DynamoDB Local's command line, translated onto `shoal serve`.
//!
//! `java -jar DynamoDBLocal.jar -sharedDb -inMemory -port 8000` becomes
//! `shoal -sharedDb -inMemory -port 8000`: with no subcommand, DynamoDB Local's single-dash
//! flags mean `serve`. They also work after `serve` and mix with Shoal's own `--flags`. An
//! unknown single-dash word (`-fooBar`) is an error naming it, never ignored: clap alone would
//! read it as the short flags `-f -o -o ...` and name only the first letter.

/// What the command line asks for once DynamoDB Local's flags are translated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invocation {
    /// Arguments for clap (the program name first).
    Args(Vec<String>),
    /// `-help`: print [`usage`] and exit 0, as DynamoDB Local does.
    Help,
}

/// One DynamoDB Local flag and what Shoal makes of it.
struct Flag {
    name: &'static str,
    /// The `serve` flag it becomes; `None` for `-help`.
    ours: Option<&'static str>,
    takes_value: bool,
    /// One line for `-help`.
    meaning: &'static str,
}

/// Every flag DynamoDB Local documents.
const FLAGS: [Flag; 9] = [
    Flag {
        name: "-port",
        ours: Some("--port"),
        takes_value: true,
        meaning: "TCP port (default 8000; 0 picks a free one and prints it)",
    },
    Flag {
        name: "-inMemory",
        ours: Some("--in-memory"),
        takes_value: false,
        meaning: "keep everything in memory; nothing survives the process",
    },
    Flag {
        name: "-dbPath",
        ours: Some("--data-dir"),
        takes_value: true,
        meaning: "data directory (default ./shoal-data); not with -inMemory",
    },
    Flag {
        name: "-sharedDb",
        ours: Some("--shared-db"),
        takes_value: false,
        meaning: "accepted: Shoal always serves one database to every key and region",
    },
    Flag {
        name: "-cors",
        ours: Some("--cors"),
        takes_value: true,
        meaning: "CORS allow-list, * or comma-separated origins (default: any origin)",
    },
    Flag {
        name: "-delayTransientStatuses",
        ours: Some("--delay-transient-statuses"),
        takes_value: false,
        meaning: "tables stay CREATING, UPDATING, DELETING for 5 s (--transient-status-seconds)",
    },
    Flag {
        name: "-optimizeDbBeforeStartup",
        ours: Some("--optimize-db-before-startup"),
        takes_value: false,
        meaning: "accepted, no effect: there is nothing to optimise before startup",
    },
    Flag {
        name: "-disableTelemetry",
        ours: Some("--disable-telemetry"),
        takes_value: false,
        meaning: "accepted, no effect: Shoal sends no telemetry",
    },
    Flag {
        name: "-help",
        ours: None,
        takes_value: false,
        meaning: "print this usage and exit",
    },
];

/// A single-dash word such as `-port` or `-fooBar`: DynamoDB Local's spelling. Two-character
/// short flags (`-h`, `-V`) are clap's and are left alone.
fn is_single_dash_word(arg: &str) -> bool {
    let mut chars = arg.chars();
    chars.next() == Some('-')
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.next().is_some()
}

/// Translates `args` (the program name first). `serve_value_flags` are the `--long` flags of
/// `serve` that take a value: the word after one is a value, never a flag, whatever it looks
/// like (`--data-dir -odd-name`).
pub fn translate(args: Vec<String>, serve_value_flags: &[String]) -> Result<Invocation, String> {
    let mut args = args.into_iter();
    let mut out: Vec<String> = args.next().into_iter().collect();
    let rest: Vec<String> = args.collect();
    let serve_from = match rest.first().map(String::as_str) {
        Some("serve") => {
            out.push("serve".to_owned());
            1
        }
        // Another subcommand, or a word clap will reject: nothing to translate.
        Some(first) if !first.starts_with('-') => {
            out.extend(rest);
            return Ok(Invocation::Args(out));
        }
        // No subcommand: DynamoDB Local's flags anywhere mean `serve`.
        _ if rest.iter().any(|arg| is_single_dash_word(arg)) => {
            out.push("serve".to_owned());
            0
        }
        // `--help`, `--version`, `-h`, nothing at all: clap's.
        _ => {
            out.extend(rest);
            return Ok(Invocation::Args(out));
        }
    };
    let mut words = rest.into_iter().skip(serve_from);
    while let Some(arg) = words.next() {
        if serve_value_flags.contains(&arg) {
            out.push(arg);
            out.extend(words.next());
            continue;
        }
        if arg == "--" {
            out.push(arg);
            out.extend(words);
            break;
        }
        if !is_single_dash_word(&arg) {
            out.push(arg);
            continue;
        }
        let Some(flag) = FLAGS.iter().find(|flag| flag.name == arg) else {
            return Err(unknown_flag(&arg));
        };
        let Some(ours) = flag.ours else {
            return Ok(Invocation::Help);
        };
        out.push(ours.to_owned());
        if flag.takes_value {
            match words.next() {
                Some(value) => out.push(value),
                None => return Err(format!("{} needs a value", flag.name)),
            }
        }
    }
    Ok(Invocation::Args(out))
}

fn unknown_flag(arg: &str) -> String {
    let suggestion = FLAGS
        .iter()
        .find(|flag| flag.name.eq_ignore_ascii_case(arg))
        .map(|flag| format!(" (did you mean {}?)", flag.name))
        .unwrap_or_default();
    format!(
        "unknown flag {arg}{suggestion}: DynamoDB Local's flags are {}; Shoal's own are \
         spelled --like-this (see `shoal serve --help`)",
        FLAGS
            .iter()
            .map(|flag| flag.name)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `-help`'s text: DynamoDB Local's flags and what Shoal does with each.
pub fn usage() -> String {
    let mut text = String::from(
        "usage: shoal [-port N] [-inMemory | -dbPath PATH] [-sharedDb] [-cors ORIGINS]\n\
         \x20            [-delayTransientStatuses] [-optimizeDbBeforeStartup] [-disableTelemetry]\n\
         \x20            [-help]\n\n\
         DynamoDB Local's command line; it starts `shoal serve` (see `shoal serve --help` for\n\
         Shoal's own flags, which mix with these, and `shoal --help` for the other commands).\n\n",
    );
    let width = FLAGS
        .iter()
        .map(|flag| label(flag).len())
        .max()
        .unwrap_or(0);
    for flag in &FLAGS {
        text.push_str(&format!("  {:width$}  {}\n", label(flag), flag.meaning));
    }
    text
}

fn label(flag: &Flag) -> String {
    match flag.name {
        "-port" => "-port N".to_owned(),
        "-dbPath" => "-dbPath PATH".to_owned(),
        "-cors" => "-cors ORIGINS".to_owned(),
        name => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_flags() -> Vec<String> {
        ["--port", "--host", "--data-dir", "--durability", "--cors"]
            .map(str::to_owned)
            .to_vec()
    }

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn translated(text: &str) -> Result<Invocation, String> {
        translate(args(text), &value_flags())
    }

    fn translates_to(text: &str, expected: &str) {
        assert_eq!(
            translated(text),
            Ok(Invocation::Args(args(expected))),
            "{text}"
        );
    }

    #[test]
    fn dynamodb_local_command_line_without_subcommand_is_serve() {
        translates_to(
            "shoal -sharedDb -inMemory -port 8000",
            "shoal serve --shared-db --in-memory --port 8000",
        );
        translates_to(
            "shoal -port 9000 -dbPath /tmp/x",
            "shoal serve --port 9000 --data-dir /tmp/x",
        );
    }

    #[test]
    fn every_flag_translates() {
        translates_to("shoal -port 1", "shoal serve --port 1");
        translates_to("shoal -inMemory", "shoal serve --in-memory");
        translates_to("shoal -dbPath d", "shoal serve --data-dir d");
        translates_to("shoal -sharedDb", "shoal serve --shared-db");
        translates_to("shoal -cors *", "shoal serve --cors *");
        translates_to(
            "shoal -cors https://a.example,http://b.example",
            "shoal serve --cors https://a.example,http://b.example",
        );
        translates_to(
            "shoal -delayTransientStatuses",
            "shoal serve --delay-transient-statuses",
        );
        translates_to(
            "shoal -optimizeDbBeforeStartup",
            "shoal serve --optimize-db-before-startup",
        );
        translates_to("shoal -disableTelemetry", "shoal serve --disable-telemetry");
        assert_eq!(translated("shoal -help"), Ok(Invocation::Help));
        assert_eq!(translated("shoal serve -help"), Ok(Invocation::Help));
        assert_eq!(translated("shoal -port 1 -help"), Ok(Invocation::Help));
    }

    #[test]
    fn flags_after_serve_and_mixed_with_ours() {
        translates_to(
            "shoal serve -port 8000 -inMemory",
            "shoal serve --port 8000 --in-memory",
        );
        translates_to(
            "shoal serve --host 0.0.0.0 -port 8000 --durability none -sharedDb",
            "shoal serve --host 0.0.0.0 --port 8000 --durability none --shared-db",
        );
        // No subcommand, ours first: a DynamoDB Local flag later still means serve.
        translates_to(
            "shoal --host 0.0.0.0 -inMemory",
            "shoal serve --host 0.0.0.0 --in-memory",
        );
        // clap's `--flag=value` and short flags pass through.
        translates_to(
            "shoal serve --port=0 -h -inMemory",
            "shoal serve --port=0 -h --in-memory",
        );
    }

    #[test]
    fn values_are_never_read_as_flags() {
        translates_to(
            "shoal -dbPath -odd-dir -port 0",
            "shoal serve --data-dir -odd-dir --port 0",
        );
        translates_to(
            "shoal serve --data-dir -oddDir -inMemory",
            "shoal serve --data-dir -oddDir --in-memory",
        );
    }

    #[test]
    fn other_commands_and_clap_flags_are_untouched() {
        for text in [
            "shoal",
            "shoal --help",
            "shoal -h",
            "shoal -V",
            "shoal --version",
            "shoal check --data-dir -x",
            "shoal bench --endpoint http://127.0.0.1:1",
            "shoal health --endpoint http://127.0.0.1:1",
            "shoal serve",
            "shoal serve --port 0",
        ] {
            translates_to(text, text);
        }
    }

    #[test]
    fn an_unknown_flag_is_an_error_naming_it() {
        let error = translated("shoal -inMemory -fooBar").unwrap_err();
        assert!(error.contains("unknown flag -fooBar"), "{error}");
        assert!(error.contains("-dbPath"), "{error}");
        let error = translated("shoal serve -port 1 -verbose").unwrap_err();
        assert!(error.contains("-verbose"), "{error}");
        // The first word decides nothing: an unknown flag alone is still named.
        let error = translated("shoal -fooBar").unwrap_err();
        assert!(error.contains("-fooBar"), "{error}");
        // Flags are case-sensitive, as DynamoDB Local's are, with a hint.
        let error = translated("shoal -inmemory").unwrap_err();
        assert!(error.contains("did you mean -inMemory?"), "{error}");
    }

    #[test]
    fn a_flag_missing_its_value_says_which() {
        assert_eq!(
            translated("shoal -inMemory -port"),
            Err("-port needs a value".to_owned())
        );
        assert_eq!(
            translated("shoal -dbPath"),
            Err("-dbPath needs a value".to_owned())
        );
    }

    #[test]
    fn usage_names_every_flag() {
        let text = usage();
        for flag in &FLAGS {
            assert!(text.contains(flag.name), "{}", flag.name);
        }
    }
}
