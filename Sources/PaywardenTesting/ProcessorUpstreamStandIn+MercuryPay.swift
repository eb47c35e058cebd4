import Foundation
import ProcessorMessages

extension ProcessorUpstreamStandIn {
    /// Records a MercuryPay request and answers it as MercuryPay's credit sale does: an approval
    /// with `RecordNo` (the upstream's own token, which the relay must replace), the account
    /// number echoed in full (the relay must mask it), a decline, or an error.
    func respondMercuryPay(path: String, body: [UInt8], authorization: String?) -> (StandInResponse, Duration) {
        record(
            ReceivedMercuryPayRequest(path: path, body: body, authorization: authorization), in: \.receivedMercuryPay,
            answering: Self.mercuryPayResponse)
    }

    static func mercuryPayResponse(to request: ReceivedMercuryPayRequest, answer: Answer) -> StandInResponse {
        func json(_ members: [ProcessorJSON.Member]) -> StandInResponse {
            StandInResponse(status: 200, body: ProcessorJSON.object(members).serialized(), headers: [("Content-Type", "application/json")])
        }
        func error(_ text: String) -> StandInResponse {
            json([
                .init("ResponseOrigin", .string("Processor")), .init("DSIXReturnCode", .string("100201")),
                .init("CmdStatus", .string("Error")), .init("TextResponse", .string(text)),
            ])
        }
        guard request.problems.isEmpty || !answer.approves else {
            return error("stand-in: " + request.problems.joined(separator: "; "))
        }
        if let response = formatFreeAnswer(answer, contentType: "application/json") { return response }
        if case .envelopeError(let message) = answer { return error(message) }
        let approved = answer.approves
        let text: String =
            switch answer {
            case .decline(_, let message): message
            default: "AP"
            }
        var members: [ProcessorJSON.Member] = [
            .init("ResponseOrigin", .string("Processor")), .init("DSIXReturnCode", .string("000000")),
            .init("CmdStatus", .string(approved ? "Approved" : "Declined")), .init("TextResponse", .string(text)),
            .init("AcctNo", .string(request.accountNumber ?? "")), .init("ExpDate", .string(request.expDate ?? "")),
            .init("CardType", .string("VISA")),
            .init("TranCode", .string(request.path.hasSuffix("/PreAuth") ? "PreAuth" : "Sale")),
            .init("InvoiceNo", .string(request.field("InvoiceNo") ?? "")), .init("Purchase", .string(request.field("Purchase") ?? "")),
        ]
        if approved {
            members += [
                .init("AuthCode", .string("123456")), .init("Authorize", .string(request.field("Purchase") ?? "")),
                .init("AcqRefData", .string("aEb001234567890123456789012345")),
                // The upstream's own token for the card, which the relay replaces with Paywarden's.
                .init("RecordNo", .string("UPSTREAM-RECORD-\(Int.random(in: 1000...9999))")),
                .init("ProcessData", .string("|00|600550672000")),
            ]
        }
        if case .approveEchoing(let form) = answer, let number = request.accountNumber {
            members += form.json(accountNumber: number, cryptogram: request.field("Cryptogram") ?? "")
        }
        return json(members)
    }
}

/// A MercuryPay request as the stand-in received it: the JSON, the card data where MercuryPay's
/// keyed sale carries it (`AcctNo`, `ExpDate`), the Authorization header, and what should not have
/// been there (`RecordNo`, `TokenType`, a card number that is not 12–19 digits).
public struct ReceivedMercuryPayRequest: Sendable {
    static let pathPrefix = "/PaymentsAPI/"

    public let path: String
    public let body: [UInt8]
    public let authorization: String?
    /// The body parsed, or nil when it is not a JSON object.
    public let parsed: ProcessorJSON?
    public let problems: [String]

    public var text: String { String(decoding: body, as: UTF8.self) }
    public var accountNumber: String? { field("AcctNo") }
    public var expDate: String? { field("ExpDate") }
    /// The body's field names, in order.
    public var fieldNames: [String] { parsed?.members?.map(\.key) ?? [] }

    public func field(_ name: String) -> String? { parsed?[name]?.stringValue }

    init(path: String, body: [UInt8], authorization: String?) {
        self.path = path
        self.body = body
        self.authorization = authorization
        let parsed = try? ProcessorJSON.parse(body, format: .mercuryPay)
        self.parsed = parsed?.members == nil ? nil : parsed
        var problems: [String] = []
        if self.parsed == nil { problems.append("the body is not a JSON object") }
        if !["/PaymentsAPI/Credit/Sale", "/PaymentsAPI/Credit/PreAuth"].contains(path) { problems.append("unexpected path \(path)") }
        for name in ["RecordNo", "TokenType"] where parsed?[name] != nil { problems.append("the body has \(name)") }
        let number = parsed?["AcctNo"]?.stringValue ?? ""
        if !(12...19).contains(number.count) || !number.allSatisfy({ $0.isASCII && $0.isNumber }) {
            problems.append("AcctNo is not 12–19 digits")
        }
        let expiry = parsed?["ExpDate"]?.stringValue ?? ""
        if expiry.count != 4 || !expiry.allSatisfy({ $0.isASCII && $0.isNumber }) { problems.append("ExpDate is not MMYY") }
        if authorization?.lowercased().hasPrefix("bearer") == true { problems.append("a Bearer credential was forwarded") }
        self.problems = problems
    }
}
