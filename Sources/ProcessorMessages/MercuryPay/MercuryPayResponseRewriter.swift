/// Rewrites the upstream's credit sale response for the client: `RecordNo` carries the high-value
/// token (Vantiv's token guide, quoted in docs/processors.md, "MercuryPay": "The transaction response
/// includes the new OmniToken, which is returned in the RecordNo field"), `AcctNo` is masked, and the
/// account number and cryptogram appear nowhere. On a decline or error no token is returned ("in the event of a decline/error response,
/// no token is generated"), and the upstream's own RecordNo is removed.
public enum MercuryPayResponseRewriter {
    public static func clientResponse(
        _ upstreamBody: [UInt8],
        token: String?,
        forwarded card: ForwardedCardData?,
        jsonLimits: ProcessorJSON.Limits = .default
    ) throws(ProcessorMessageError) -> ProcessorJSON {
        let body = try ProcessorJSON.parse(upstreamBody, format: .mercuryPay, limits: jsonLimits)
        return try clientResponse(body, token: token, forwarded: card)
    }

    public static func clientResponse(
        _ upstream: ProcessorJSON, token: String?, forwarded card: ForwardedCardData?
    ) throws(ProcessorMessageError) -> ProcessorJSON {
        guard upstream.members != nil else {
            throw ProcessorMessageError(.mercuryPay, .unexpectedRoot, field: nil, "the upstream's body must be a JSON object")
        }
        let scrubber = ReplyCardDataScrubber(format: .mercuryPay, card: card)
        var body = scrubber.scrubbed(upstream)
        if let token, upstream["CmdStatus"]?.stringValue == "Approved" {
            body.setMember("RecordNo", .string(token))
        } else {
            body.removeMember("RecordNo")
        }
        if let acctNo = upstream["AcctNo"]?.stringValue {
            let masked = card.map { CardNumberMasking.lastFour($0.accountNumber.revealed) } ?? maskedEcho(acctNo)
            body.setMember("AcctNo", .string(masked))
        }
        try scrubber.refuseUnmaskable(body)
        return body
    }

    /// An echoed AcctNo without the forwarded card to compare: digits beyond the last four hidden.
    private static func maskedEcho(_ value: String) -> String {
        let digits = value.filter(\.isNumber)
        return digits.count > 4 ? CardNumberMasking.lastFour(value) : value
    }
}
