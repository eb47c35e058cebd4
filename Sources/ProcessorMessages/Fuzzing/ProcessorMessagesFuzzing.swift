/// The libFuzzer entry point's body: every parser and rewriter that takes bytes from outside is fed
/// the same input, and the result discarded. A trap (crash, precondition, stack overflow, hang) in
/// any of them is a bug; thrown errors are the expected outcome for nearly all inputs.
///
/// The libFuzzer harness `Fuzz/Harnesses/FuzzProcessorXML` (built by `scripts/fuzz.sh`) calls it
/// for each input, and `FuzzCorpusTests` replays the committed corpus through it.
public enum ProcessorMessagesFuzzing {
    public static func run(_ bytes: [UInt8]) {
        if let document = try? ProcessorXML.parse(bytes) {
            // A parsed document must serialize to something that parses again.
            _ = try? ProcessorXML.parse(ProcessorXML.serialize(document))
        }
        let card = try? ForwardedCardData(
            accountNumber: "4111111111111111", expirationYYMMDD: "301231", cryptogram: "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", eci: "07")

        if let request = try? CnpOnlineRequest.parse(bytes), let card {
            _ = try? CnpUpstreamRewriter.upstreamRequest(request, card: card)
        }
        let token = CnpResponseRewriter.TokenResult(token: "4111110000001111", code: .registered, type: "VI", bin: "411111")
        _ = try? CnpResponseRewriter.clientResponse(bytes, token: token, forwarded: card)

        for operation in MercuryPayOperation.allCases {
            if let request = try? MercuryPayRequest.parse(bytes, operation: operation), let card {
                _ = MercuryPayForwarding.upstreamRequest(request, card: card).body.serialized()
            }
        }
        _ = try? MercuryPayResponseRewriter.clientResponse(bytes, token: "4111110000001111", forwarded: card)

        _ = try? RadialDecryptBlobRequest.parse(bytes)
        if let request = try? RadialCreditCardAuthRequest.parse(bytes), let card {
            _ = ProcessorXML.serialize(RadialForwarding.upstreamRequest(request, card: card).document)
        }
        _ = try? RadialReplyRewriter.clientReply(bytes, token: "4111110000001111", forwarded: card)
    }

    /// An eProtect paypage registration form; the token JSON it assembles, for the caller to feed
    /// to the token parser (this module does not know it), or nil when the form is refused.
    public static func eProtectForm(_ bytes: [UInt8]) -> [UInt8]? {
        (try? EProtectForm(body: bytes))?.tokenJSON
    }
}
