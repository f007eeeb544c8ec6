//! [`TokenCost`]: what a request will spend of a server's token meters, declared by its caller.

/// What a request will spend of the server's token meters (OpenAI's tokens, Anthropic's input
/// and output tokens), declared by the caller as a request extension.
///
/// A call that declares its cost spends it against the token meters the server last reported
/// as it leaves its key's gate, whether at once or after waiting there: where a meter has less
/// left than the call will spend, the call waits for that meter's reset if its cap and budget
/// allow (keeping its place among the calls waiting), and fails at once with
/// [`Throttled`](crate::Throttled) if not, instead of being sent to be refused. (The cap
/// counts where the meter as the server reported it cannot pay the call, as for a spent
/// window; a meter short only by what this process's calls out declared is waited for as
/// any wait within the cap and its spread.) A meter of
/// `tokens` is spent by input and output together, one of input tokens by the input, one of
/// output tokens by the output. Calls that declare nothing are held by a token meter only once
/// the server says it is spent. Through reqwest, declare it with reqwest-middleware's
/// `RequestBuilder::with_extension`.
///
/// Declare the most a request can spend (the prompt's tokens, and `max_tokens` for the
/// output): spending less is never early, spending more than declared is found out by the
/// server's next count.
///
/// Through reqwest (feature `reqwest`), declare it with reqwest-middleware's
/// `RequestBuilder::with_extension(TokenCost::new(..))`.
///
/// # Example
///
/// ```
/// use tower_retry_after::TokenCost;
///
/// let request = http::Request::post("https://api.openai.com/v1/chat/completions")
///     .extension(TokenCost::new(1_200, 800))
///     .body(())
///     .unwrap();
/// assert_eq!(request.extensions().get::<TokenCost>().unwrap().total(), 2_000);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TokenCost {
    input: u64,
    output: u64,
}

impl TokenCost {
    /// A request that sends `input` tokens and may receive up to `output`.
    pub fn new(input: u64, output: u64) -> Self {
        TokenCost { input, output }
    }

    /// The input tokens.
    pub fn input(&self) -> u64 {
        self.input
    }

    /// The output tokens, at most.
    pub fn output(&self) -> u64 {
        self.output
    }

    /// Input and output together.
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }
}
