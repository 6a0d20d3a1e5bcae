//! An endpoint URL as the client uses it: `http://host[:port]`, `https://host[:port]`, or a
//! bare `host:port` (plain HTTP, as `shoal loadgen` and `shoal streams tail` pass it).

/// Where a [`super::Connection`] connects, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub tls: bool,
    /// The host as written in the URL (an IPv6 literal keeps its brackets).
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// Parses `url`; the port defaults to 443 for `https://` and 80 for `http://`.
    pub fn parse(url: &str) -> Result<Endpoint, String> {
        let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some((scheme, _)) = url.split_once("://") {
            return Err(format!(
                "{url}: unsupported scheme `{scheme}`; use http:// or https://"
            ));
        } else {
            (false, url)
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if !path.trim_end_matches('/').is_empty() {
            return Err(format!(
                "{url}: an endpoint has no path; DynamoDB's API is served at `/`"
            ));
        }
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = split_port(authority)
            .ok_or_else(|| format!("{url}: the port is not a number from 1 to 65535"))?;
        if host.is_empty() {
            return Err(format!("{url}: no host name"));
        }
        Ok(Endpoint {
            tls,
            host: host.to_string(),
            port: port.unwrap_or(default_port),
        })
    }

    /// The `Host` header: the host, and the port unless it is the scheme's default.
    pub fn host_header(&self) -> String {
        let default_port = if self.tls { 443 } else { 80 };
        if self.port == default_port {
            self.host.clone()
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The endpoint as a URL, for reports.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.host_header())
    }

    /// The host to resolve, and the TLS server name: an IPv6 literal without its brackets.
    pub fn bare_host(&self) -> &str {
        self.host
            .strip_prefix('[')
            .and_then(|host| host.strip_suffix(']'))
            .unwrap_or(&self.host)
    }

    /// The region of an AWS endpoint host `dynamodb.<region>.amazonaws.com` (or `.com.cn`).
    pub fn aws_region(&self) -> Option<&str> {
        let rest = self.host.strip_prefix("dynamodb.")?;
        let (region, domain) = rest.split_once('.')?;
        let aws = domain == "amazonaws.com" || domain == "amazonaws.com.cn";
        (aws && !region.is_empty()).then_some(region)
    }
}

/// `host[:port]` split; `None` when a port is written but is not a valid one.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    // An IPv6 literal's own colons are inside its brackets.
    let port_colon = match authority.rfind(']') {
        Some(bracket) => authority[bracket..].find(':').map(|at| bracket + at),
        None => authority.rfind(':'),
    };
    let Some(colon) = port_colon else {
        return Some((authority, None));
    };
    let port: u16 = authority[colon + 1..].parse().ok()?;
    (port != 0).then_some((&authority[..colon], Some(port)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(url: &str) -> Endpoint {
        Endpoint::parse(url).unwrap()
    }

    #[test]
    fn schemes_set_tls_and_the_default_port() {
        let aws = parse("https://dynamodb.eu-west-1.amazonaws.com");
        assert!(aws.tls);
        assert_eq!(aws.port, 443);
        assert_eq!(aws.host_header(), "dynamodb.eu-west-1.amazonaws.com");
        assert_eq!(aws.url(), "https://dynamodb.eu-west-1.amazonaws.com");
        let local = parse("http://127.0.0.1:8000/");
        assert!(!local.tls);
        assert_eq!(local.host_header(), "127.0.0.1:8000");
        assert_eq!(local.url(), "http://127.0.0.1:8000");
        assert_eq!(parse("http://localhost").port, 80);
        assert_eq!(parse("127.0.0.1:9").url(), "http://127.0.0.1:9");
        assert_eq!(
            parse("https://localhost:8443").host_header(),
            "localhost:8443"
        );
        assert_eq!(parse("https://localhost:443").host_header(), "localhost");
    }

    #[test]
    fn ipv6_literals_keep_their_brackets_in_the_host_header_only() {
        let v6 = parse("http://[::1]:8000");
        assert_eq!(v6.host_header(), "[::1]:8000");
        assert_eq!(v6.bare_host(), "::1");
        assert_eq!(parse("https://[::1]").port, 443);
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        let error = |url: &str| Endpoint::parse(url).unwrap_err();
        assert!(error("ftp://host").contains("unsupported scheme `ftp`"));
        assert!(error("http://host:http").contains("port"));
        assert!(error("http://host:0").contains("port"));
        assert!(error("http://host:70000").contains("port"));
        assert!(error("https://").contains("no host"));
        assert!(error("http://host/tables").contains("no path"));
    }

    #[test]
    fn the_region_comes_from_an_aws_host_name() {
        let region = |url: &str| parse(url).aws_region().map(str::to_string);
        assert_eq!(
            region("https://dynamodb.ap-south-1.amazonaws.com").as_deref(),
            Some("ap-south-1")
        );
        assert_eq!(
            region("https://dynamodb.cn-north-1.amazonaws.com.cn").as_deref(),
            Some("cn-north-1")
        );
        assert_eq!(region("http://localhost:8000"), None);
        assert_eq!(region("https://dynamodb.example.com"), None);
    }
}
