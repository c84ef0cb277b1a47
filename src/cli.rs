//! The clap types of the command tree (see README.md). They only parse: no I/O, no env.
//! Doc comments are the help text.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "hcpx",
    version,
    about = "One safe door from agents and people to command-line tools",
    long_about = "hcpx runs command-line tools wrapped as packs, for people, coding agents and MCP hosts, \
                  through one policy, one credential binding and one sandbox.",
    after_help = "Start here:\n  hcpx search journey          find a pack\n  hcpx skill transit           \
                  read how to use it\n  hcpx availability transit    check it can run here\n\n\
                  Every command takes --json and then prints the result envelope.",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: HcpxCommand,
}

// hcpx's own flags, which every command takes: one definition for the whole tree and
// for [`exec_tree`]. (No doc comment: a flattened struct's would be the root's about.)
#[derive(Debug, Clone, clap::Args)]
pub struct Global {
    /// Print the result envelope as JSON instead of text (every command takes it).
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum HcpxCommand {
    /// Find packs by what they do, ranked by relevance.
    #[command(
        after_help = "Examples:\n  hcpx search journey\n  hcpx search git history --limit 3\n  \
                            hcpx search --all    (every pack, installed or in the catalog)\n\n\
                            hcpx search weather --registry   (also packs published on npm)\n\n\
                            Matches far weaker than the best one are hidden (and counted); --all shows them. \
                            With --json each result has its `score`. With --registry, the registry's packs are \
                            ranked among the others within --limit, and each one found is `\"installed\": false` with its \
                            `source` (npm:NAME@VERSION) and `install` command."
    )]
    Search {
        /// Words to look for in ids, keywords, descriptions, commands and skills.
        query: Vec<String>,
        /// Show at most this many packs [default: 10; with --all, every one].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: Option<u32>,
        /// Also show weak matches (a word only in a pack's skill text, far below the best match),
        /// and without --limit every match: `search --all` lists every pack, installed or not.
        #[arg(long)]
        all: bool,
        /// Also search the npm registry npm is configured with for packs (packages with the
        /// keyword `hcpx-pack`), listed as not installed with the command that installs them.
        /// Nothing is installed; when npm is missing or offline, a warning says so.
        #[arg(long)]
        registry: bool,
    },
    /// Show a pack's SKILL.md and a reference of its commands and parameters.
    #[command(after_help = "Example:\n  hcpx skill transit")]
    Skill {
        /// The pack id.
        pack: String,
    },
    /// Say whether a pack is installed, runnable, bound and permitted here, and how to fix what is not.
    #[command(after_help = "Example:\n  hcpx availability transit --json")]
    Availability {
        /// The pack id.
        pack: String,
    },
    /// Run a pack command through policy, binding and the sandbox.
    #[command(
        after_help = "Examples:\n  hcpx exec transit plan -- from=Westgate \"to=North Park\" at=08:00\n  \
                            hcpx exec transit plan --json -- from=Airport to=Cannery at=17:30\n  \
                            hcpx exec git commit --dry-run -- \"message=Fix the parser\"\n\n\
                            Parameters are KEY=VALUE words, one per word; repeat a key for an array. They may\n\
                            follow the command directly; after `--`, a value may also start with `-`.\n\
                            `hcpx skill PACK` lists them."
    )]
    Exec(ExecArgs),
    /// Install a pack: npm:NAME[@VERSION], a local folder, or a built-in or catalog id.
    #[command(
        after_help = "Examples:\n  hcpx install ./my-pack\n  hcpx install npm:hcp-weather@1.2.0\n  \
                            hcpx install rg        (a catalog pack, written from hcpx itself: no network)\n  \
                            hcpx install transit\n\n`hcpx search --all` lists the catalog. Only hcp.json, SKILL.md and the pack's CLI file are taken; nothing \
                            from the package runs. The same version again changes nothing."
    )]
    Install {
        /// npm:NAME[@VERSION], a folder, or the id of a built-in or catalog pack.
        source: String,
        /// Confirm (the default policy asks before installing).
        #[arg(long)]
        yes: bool,
    },
    /// Remove an installed pack (a built-in one with the same id is used again).
    Uninstall {
        /// The pack id.
        pack: String,
        /// Confirm (the default policy asks before uninstalling).
        #[arg(long)]
        yes: bool,
    },
    /// Store a credential for one pack: read from the terminal without echo, or from stdin (a person's command).
    ///
    /// A binding is tied to the pack it was given to: its source and the digest of its
    /// files. If the pack with that id is later installed from elsewhere or changes,
    /// the binding is held back until a person runs `hcpx bind PACK KEY --keep`.
    #[command(after_help = "Examples:\n  hcpx bind weather WEATHER_API_KEY\n  \
                            printf %s \"$KEY\" | hcpx bind weather WEATHER_API_KEY\n  \
                            hcpx bind weather WEATHER_API_KEY --from-env MY_WEATHER_KEY\n  \
                            hcpx bind weather WEATHER_API_KEY --keep")]
    Bind {
        /// The pack id.
        pack: String,
        /// The binding's name, as the pack's manifest declares it.
        key: String,
        /// Store only the name of this environment variable; its value is read at each exec.
        #[arg(long, value_name = "VAR", conflicts_with = "keep")]
        from_env: Option<String>,
        /// Release a binding held back because the pack with this id changed (another
        /// source or other files): it reaches the pack installed now, unchanged.
        #[arg(long)]
        keep: bool,
    },
    /// Remove one stored credential (a person's command).
    Unbind {
        /// The pack id.
        pack: String,
        /// The binding's name.
        key: String,
    },
    /// List declared and stored bindings: names and whether each is set, never values.
    Bindings,
    /// Page through the full output of a recent call whose result showed only part of it.
    #[command(after_help = "Example:\n  hcpx output out-3 --offset 32768 --limit 32768\n\n\
                            Outputs are kept by the MCP server that produced them: the most recent 64 MiB, each for at most an hour.")]
    Output {
        /// The `outputId` of the result.
        id: String,
        /// Which stream.
        #[arg(long, value_parser = ["stdout", "stderr"], default_value = "stdout")]
        stream: String,
        /// Start at this byte.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// At most this many bytes.
        #[arg(long, default_value_t = 32 * 1024, value_parser = clap::value_parser!(u64).range(1..=8 * 1024 * 1024))]
        limit: u64,
    },
    /// Plug hcpx into a host's configuration: show the change, or write it with --write.
    #[command(
        after_help = "Hosts: mcp (.hcp/mcp.json), claude-desktop, claude-code, cursor, vscode, codex, windsurf, zed, \
                            gemini, opencode, copilot-cli, qwen-code, kiro, cline, lm-studio, antigravity, amp, crush, \
                            factory; plugin writes an Agent Plugins folder.\n\nExamples:\n  hcpx adopt cursor            (show the diff)\n  \
                            hcpx adopt cursor --write --yes\n  hcpx adopt codex --remove --write --yes\n  \
                            hcpx adopt plugin --write --yes   (an Agent Plugins folder, hcpx-plugin/)\n\n\
                            Comments, order and every other setting are kept; the file before the first adopt \
                            stays as NAME.bak. An entry hcpx did not write is replaced only with --force, and \
                            --remove puts it back."
    )]
    Adopt {
        /// The host: mcp, claude-desktop, claude-code, cursor, vscode, codex, windsurf, zed, gemini, opencode,
        /// copilot-cli, qwen-code, kiro, cline, lm-studio, antigravity, amp, crush, factory; or plugin.
        host: String,
        /// Write the change (otherwise only show it).
        #[arg(long)]
        write: bool,
        /// Take hcpx's entry out instead.
        #[arg(long)]
        remove: bool,
        /// Which of the host's files: project or user.
        #[arg(long, value_parser = ["project", "user"])]
        scope: Option<String>,
        /// For a shell agent: install the hcpx skill, an instructions block and HCP_AGENT=1 instead.
        #[arg(long)]
        native: bool,
        /// Replace an entry under hcpx's key that hcpx did not write (--remove puts it back).
        #[arg(long)]
        force: bool,
        /// Point the host at a running `hcpx mcp --http` server at this URL instead of starting hcpx
        /// (hosts that take URL entries only; a token is never written: set it in the host).
        #[arg(long, value_name = "URL", conflicts_with = "native")]
        url: Option<String>,
        /// Confirm the write (the default policy asks).
        #[arg(long)]
        yes: bool,
        /// `adopt plugin`: the plugin folder to write [default: hcpx-plugin].
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// `adopt plugin`: also put each installed pack's skill in the plugin.
        #[arg(long)]
        pack_skills: bool,
    },
    /// Serve hcpx to MCP hosts over stdio, or over Streamable HTTP with --http or --unix: one tool, `hcp`, taking the same argv.
    #[command(
        after_help = "Hosts start it for you; `hcpx adopt HOST --write` writes their configuration.\n\n\
                            Over HTTP:\n  hcpx mcp --http 127.0.0.1:8765\n  \
                            hcpx mcp --unix ~/.hcp/mcp.sock\n  \
                            HCP_MCP_TOKEN=... hcpx mcp --http 0.0.0.0:8765 --allow-host my-host.lan\n  \
                            hcpx mcp --http 0.0.0.0:8765 --allow-host hcp.example.com \\\n      \
                            --oauth-issuer https://id.example.com --audience https://hcp.example.com/mcp\n\n\
                            The endpoint is /mcp. Without a token, a loopback address or a socket file serves only \
                            the user who started the server (others get 403); any other address needs a token \
                            (--token-file PATH or HCP_MCP_TOKEN), which every request must then carry as \
                            `Authorization: Bearer TOKEN`. With --oauth-issuer, every request needs an OAuth access \
                            token instead (scopes hcp.read, hcp.full; metadata at \
                            /.well-known/oauth-protected-resource). A request head must arrive within 10 s and a body \
                            within 20 s; at most 256 connections (fewer under a low descriptor limit) and 1,000 \
                            sessions are held."
    )]
    Mcp(McpArgs),
    /// Keep hcpx resident for this user: `hcpx exec` in a shell hands its call over instead of setting up the sandbox again.
    #[command(after_help = "Examples:\n  \
                            hcpx serve &\n  \
                            hcpx serve --idle 1800        (stops after 30 minutes without a call)\n  \
                            hcpx --json serve &           (one line on stdout once it serves: its socket and pid)\n\n\
                            It listens at $HCP_HOME/run/exec.sock, in a folder only you can enter. `hcpx exec` \
                            hands it a call only when the server would run it exactly as the process would: the \
                            same user, HCP_HOME, HCP_* settings and TMPDIR, namespaces, root, cgroup, security label, \
                            no_new_privs, seccomp, capabilities, limits and hcpx binary, from outside any pack, \
                            and without a person at the terminal who may be asked to confirm. Any other call \
                            runs in its own process, as without a server. HCP_RESIDENT=off keeps every call in \
                            its process; HCP_RESIDENT=require fails a call the server does not take. The server \
                            refuses to start under no_new_privs or a seccomp filter (inside a sandbox), where \
                            it could not tell a confined client from one that is not.")]
    Serve(ServeArgs),
    /// Show the effective policy, check one decision, or set or unset a rule.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Tools for pack authors.
    #[command(subcommand)]
    Pack(PackCommand),
    /// Report HCP_HOME, packs, policy files and which sandbox layers this machine enforces.
    Doctor,
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    #[command(after_help = "Examples:\n  \
                            hcpx completions bash > ~/.local/share/bash-completion/completions/hcpx\n  \
                            hcpx completions zsh > ~/.zfunc/_hcpx        (with fpath+=~/.zfunc before compinit)\n  \
                            hcpx completions fish > ~/.config/fish/completions/hcpx.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print the man page (roff) of hcpx, or of one command.
    #[command(after_help = "Examples:\n  \
                            hcpx man | man -l -\n  \
                            hcpx man exec | man -l -\n  \
                            mkdir -p ~/.local/share/man/man1 && hcpx man > ~/.local/share/man/man1/hcpx.1")]
    Man {
        /// A command, `policy set` for a nested one; none for hcpx itself.
        command: Vec<String>,
    },
}

// `hcpx exec`'s words (its help text is the `Exec` variant's).
#[derive(Debug, Clone, clap::Args)]
pub struct ExecArgs {
    /// The pack id.
    pub pack: String,
    /// The command name.
    pub command: String,
    /// Show the plan (decision, child argv, env names, sandbox) without running it.
    #[arg(long)]
    pub dry_run: bool,
    /// Confirm a command whose policy is `confirm` (not enough for `confirm-human`).
    #[arg(long)]
    pub yes: bool,
    /// Stop the command after this many milliseconds (at most 600000).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=crate::manifest::MAX_TIMEOUT_MS))]
    pub timeout_ms: Option<u64>,
    /// KEY=VALUE parameters (after `--` when a word starts with `-`).
    #[arg(value_name = "KEY=VALUE")]
    pub params: Vec<String>,
}

/// The shells `hcpx completions` writes a script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

impl CompletionShell {
    pub fn name(self) -> &'static str {
        match self {
            Self::Bash => "bash",
            Self::Zsh => "zsh",
            Self::Fish => "fish",
            Self::Elvish => "elvish",
            Self::Powershell => "powershell",
        }
    }
}

/// `hcpx serve`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Stop after this many seconds without a call (by default it runs until stopped).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub idle: Option<u64>,
}

/// `hcpx mcp`'s options.
#[derive(Debug, Clone, clap::Args)]
#[command(group(clap::ArgGroup::new("listen").args(["http", "unix"])))]
pub struct McpArgs {
    /// Deny every command that is not a read, and say so in the tool's annotations.
    #[arg(long)]
    pub read_only: bool,
    /// Serve Streamable HTTP at /mcp on this IP:PORT instead of stdio (port 0 picks a free one,
    /// printed on stderr, and with --json in a line on stdout). Without a token only loopback is
    /// allowed, and only connections of the user who started the server are accepted.
    #[arg(long, value_name = "IP:PORT")]
    pub http: Option<String>,
    /// Serve Streamable HTTP at /mcp on a new unix socket file at PATH (mode 0600) instead of
    /// stdio; only the user who started the server may connect, unless a token is set.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Read the bearer token every HTTP request must carry from this file (else HCP_MCP_TOKEN).
    /// Required on an address that is not loopback; with it, any user who has it may connect.
    #[arg(
        long,
        value_name = "PATH",
        requires = "listen",
        conflicts_with = "oauth_issuer"
    )]
    pub token_file: Option<PathBuf>,
    /// Be an OAuth 2.1 resource server instead of taking a static token: every request needs a
    /// JWT access token from this issuer (https://..., its keys found through its metadata),
    /// for --audience, and its subject is the caller. Needs --audience.
    #[arg(long, value_name = "URL", requires_all = ["listen", "audience"])]
    pub oauth_issuer: Option<String>,
    /// This server's URL as hosts reach it (e.g. https://hcp.example.com/mcp): the audience
    /// (resource) its access tokens must be for.
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub audience: Option<String>,
    /// The least scope a token needs: `read` (hcp.read; a token with only it gets the read-only
    /// tool, hcp.full gets full use) or `full` (only hcp.full is served).
    #[arg(
        long,
        value_enum,
        value_name = "SCOPE",
        default_value = "read",
        requires = "oauth_issuer"
    )]
    pub scope: ScopeArg,
    /// The access token claim that lists the caller's groups, which policy rules may name.
    #[arg(
        long,
        value_name = "CLAIM",
        default_value = "groups",
        requires = "oauth_issuer"
    )]
    pub groups_claim: String,
    /// Also accept requests from this browser origin (scheme://host:port); repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "listen")]
    pub allow_origin: Vec<String>,
    /// Also accept this name in the Host header (besides loopback names and the bound address);
    /// repeatable.
    #[arg(long, value_name = "HOST", requires = "listen")]
    pub allow_host: Vec<String>,
    /// End an HTTP session after this many seconds without a request (at most 1,000 sessions
    /// live; past that the one idle the longest ends).
    #[arg(long, value_name = "N", default_value_t = 1800, requires = "listen",
          value_parser = clap::value_parser!(u64).range(1..=604_800))]
    pub session_idle_secs: u64,
    /// Keep no HTTP sessions: every request stands alone (no elicitation; list changes only through
    /// subscriptions/listen).
    #[arg(long, requires = "listen")]
    pub stateless: bool,
    /// Seal confirmations with the keys of this file (one `ID BASE64` a line, the first sealing),
    /// shared by every replica of the server and read again when it changes; with --stateless,
    /// replicas that share it and HCP_HOME answer any request.
    #[arg(long, value_name = "PATH", requires = "listen")]
    pub state_key_file: Option<PathBuf>,
}

/// `hcpx mcp --scope`: the least scope an OAuth access token needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    Read,
    Full,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print every default and rule in force, and which file each comes from.
    Show,
    /// Add or replace a rule in the user's policy (a person's command).
    #[command(
        after_help = "Examples:\n  hcpx policy set git.commit deny\n  hcpx policy set 'git.*' confirm\n  \
                            hcpx policy set '*.read' allow\n  \
                            hcpx policy set weather.forecast confirm --force   (a pack not installed yet)\n\n\
                            Decisions: allow, confirm, confirm-human, deny. The pack and command must exist \
                            (a typo would be a rule that never matches); --force takes the rule as written."
    )]
    Set {
        /// pack.command, pack.* or *.effect
        #[arg(value_name = "MATCH")]
        matcher: String,
        /// allow, confirm, confirm-human or deny
        decision: String,
        /// Take the rule even though no known pack or command matches it.
        #[arg(long)]
        force: bool,
    },
    /// Remove a rule from the user's policy (a person's command).
    #[command(after_help = "Example:\n  hcpx policy unset git.commit\n\n\
                            `hcpx policy show` lists the rules and the file each is in; project rules are \
                            edited in the project's .hcp/policy.json.")]
    Unset {
        /// The rule's match, as `policy show` lists it: pack.command, pack.* or *.effect
        #[arg(value_name = "MATCH")]
        matcher: String,
    },
    /// Decide one pack command for the current caller, and name the rule behind it.
    #[command(after_help = "Example:\n  hcpx policy check git commit")]
    Check {
        /// The pack id.
        pack: String,
        /// The command name.
        command: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PackCommand {
    /// Validate a pack folder: manifest, SKILL.md and CLI file. Lists every problem.
    #[command(after_help = "Example:\n  hcpx pack check ./my-pack")]
    Check {
        /// The pack folder.
        dir: PathBuf,
    },
    /// Write a valid starting pack into ./ID/: a CLI script of its own, or with --bin a pack
    /// around a program already on PATH.
    #[command(
        after_help = "Examples:\n  hcpx pack new weather && hcpx pack check weather\n  \
                            hcpx pack new rgx --bin rg   (asks `rg --version` and `rg --help` once, in the sandbox)"
    )]
    New {
        /// The new pack's id.
        id: String,
        /// Wrap this program of PATH instead (no script): its --version gives `program.versionArgs`,
        /// its --help the description and a first `help` command.
        #[arg(long, value_name = "PROGRAM")]
        bin: Option<String>,
    },
}

/// The first of `argv` (the words after `hcpx`) that is not hcpx's own `--json`:
/// the command's name, when it is one.
pub fn first_word(argv: &[String]) -> Option<&str> {
    argv.iter().map(String::as_str).find(|word| *word != "--json")
}

/// Whether `argv` is an `hcpx exec` call, which [`exec_tree`] can parse.
pub fn names_exec(argv: &[String]) -> bool {
    first_word(argv) == Some("exec")
}

/// The command tree with `exec` alone under the root: what `hcpx exec` parses with.
/// Building the whole tree (every command, its arguments and help) was most of what
/// parsing cost a CLI process (200,000 of its 930,000 instructions for `hcpx
/// --version`). It gives the same [`Cli`] as the whole tree for every call it
/// accepts (see the tests); for help, a version, or any error, the caller parses
/// with the whole tree again, so that every message stays the same.
pub fn exec_tree() -> clap::Command {
    use clap::Args as _;
    Global::augment_args(clap::Command::new("hcpx"))
        .subcommand(ExecArgs::augment_args(clap::Command::new("exec")))
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches as _};

    use super::*;

    /// Every call the exec tree accepts is parsed as the whole tree parses it; what
    /// it refuses (help, versions, errors) the whole tree answers.
    #[test]
    fn the_exec_tree_parses_as_the_whole_tree_does() {
        let calls: &[&[&str]] = &[
            &["exec", "transit", "plan", "--", "from=A", "to=B"],
            &["--json", "exec", "transit", "plan", "from=A"],
            &[
                "exec",
                "--json",
                "git",
                "log",
                "--dry-run",
                "--yes",
                "--timeout-ms",
                "500",
            ],
            &[
                "exec",
                "git",
                "log",
                "--timeout-ms=7",
                "--",
                "--json",
                "-x",
                "a=-b",
            ],
            &["exec", "git", "commit", "message=Fix", "--json"],
            &["exec", "git"],
            &["exec"],
            &["exec", "git", "log", "--help"],
            &["exec", "-h"],
            &["exec", "git", "log", "--version"],
            &["--version", "exec", "git", "log"],
            &["exec", "git", "log", "--timeout-ms", "0"],
            &["exec", "git", "log", "--timeout-ms", "600001"],
            &["exec", "git", "log", "--unknown"],
            &["exec", "git", "log", "--dry-run", "--dry-run"],
            &["--json", "--json", "exec", "a", "b"],
            &["exec", "a", "b", "--", "--", "x"],
        ];
        let mut accepted = Vec::new();
        for call in calls {
            let words: Vec<String> = std::iter::once("hcpx")
                .chain(call.iter().copied())
                .map(str::to_owned)
                .collect();
            let whole = Cli::command()
                .try_get_matches_from(&words)
                .and_then(|m| Cli::from_arg_matches(&m));
            let argv: Vec<String> = call.iter().map(|word| (*word).to_owned()).collect();
            // As `crate::parse` does: the exec tree only for what names exec first.
            let alone = names_exec(&argv).then(|| {
                exec_tree()
                    .try_get_matches_from(&words)
                    .and_then(|m| Cli::from_arg_matches(&m))
            });
            if let Some(Ok(alone)) = alone {
                accepted.push(*call);
                let whole = whole.unwrap_or_else(|error| panic!("{call:?}: the whole tree refuses: {error}"));
                assert_eq!(format!("{alone:?}"), format!("{whole:?}"), "{call:?}");
            }
        }
        // The calls above that would run (or fail later, on the pack); `--json` twice
        // before exec is one the whole tree answers.
        assert_eq!(
            accepted,
            calls[..5].iter().chain(&calls[16..]).copied().collect::<Vec<_>>()
        );
    }

    #[test]
    fn only_exec_calls_name_exec() {
        let names =
            |words: &[&str]| names_exec(&words.iter().map(|word| (*word).to_owned()).collect::<Vec<_>>());
        assert!(names(&["exec", "a", "b"]));
        assert!(names(&["--json", "exec"]));
        assert!(!names(&["search", "exec"]));
        assert!(!names(&["--help", "exec"]));
        assert!(!names(&["help", "exec"]));
        assert!(!names(&[]));
    }

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }

    #[test]
    fn json_is_global() {
        let cli = Cli::try_parse_from(["hcpx", "--json", "search", "journey"]).unwrap();
        assert!(cli.global.json);
        let cli = Cli::try_parse_from(["hcpx", "policy", "check", "git", "log", "--json"]).unwrap();
        assert!(cli.global.json);
    }
}
