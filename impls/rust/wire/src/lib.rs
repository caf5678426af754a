//! What the Rust servers (impls/rust) and the load generator (loadgen/)
//! must agree on byte for byte, defined once: the server scenarios' names
//! as they appear on the command line and in the ready and final lines.

/// A server scenario of the protocol (docs/protocol.md, "Servers").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scenario {
    Echo,
    Http,
}

impl Scenario {
    /// Every server scenario, in the protocol's order.
    pub const ALL: [Scenario; 2] = [Scenario::Echo, Scenario::Http];

    /// The name on the command line and in the JSON lines.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Echo => "echo",
            Scenario::Http => "http",
        }
    }

    /// The scenario a command-line word names, if any.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The path prefix of the http scenario's requests: `GET /ping/<token>`.
pub const HTTP_PING_PREFIX: &str = "/ping/";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::from_name(s.name()), Some(s));
        }
        assert_eq!(Scenario::from_name("chain"), None);
        assert_eq!(Scenario::from_name("Echo"), None);
    }
}
