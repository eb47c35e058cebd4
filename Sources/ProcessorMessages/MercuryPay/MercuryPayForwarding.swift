/// The request the upstream receives: MercuryPay's keyed credit sale (or pre-authorization) with the
/// card data in place of the token.
///
/// Field mapping (MercuryPay's non-token request, as its own samples and integrations send it:
/// mozvat/PaymentBOT creditsale.py `{InvoiceNo, RefNo, Memo, AcctNo, ExpDate, Purchase}` to
/// `/PaymentsAPI/Credit/Sale`; wix-playground/libpay-mercurypay AuthorizeOrSaleRequest `AcctNo`,
/// `ExpDate` as MMYY):
/// - `RecordNo` and `TokenType` are removed, and so are the client's own fields of the names the
///   options fill (the cryptogram, ECI and AccountSource fields), sent or not; `AcctNo` (the full
///   account number) and `ExpDate` (MMYY) take `RecordNo`'s place in the object.
/// - Every other field (OperatorID, InvoiceNo, Purchase, Tax, Frequency, RefNo, Memo, unknown ones)
///   is forwarded unchanged and in order.
/// - Cryptogram and ECI: no MercuryPay field for them is documented in the public material (the
///   REST and TStream samples carry none, and Apple Pay through MercuryPay went via eProtect and
///   RecordNo, DOC-1532). They are therefore not sent unless the operator names the upstream's
///   fields in ``Options``; ``Forwarded/cryptogramSent`` says whether it was, so the caller can refuse
///   to forward a DPAN without its cryptogram if its upstream requires one.
public enum MercuryPayForwarding {
    public struct Options: Sendable, Hashable {
        /// The upstream's field for the cryptogram; nil (the default) sends none.
        public var cryptogramField: String?
        /// The upstream's field for the ECI; nil (the default) sends none.
        public var eciField: String?
        /// `AccountSource` to add (MercuryPay: Keyed, Swiped, Contactless); nil adds none.
        public var accountSource: String?

        public init(cryptogramField: String? = nil, eciField: String? = nil, accountSource: String? = nil) {
            self.cryptogramField = cryptogramField
            self.eciField = eciField
            self.accountSource = accountSource
        }
    }

    /// The forwarded body holds the full account number: its description lists field names only.
    public struct Forwarded: Sendable, CustomStringConvertible, CustomReflectable {
        public var body: ProcessorJSON
        public var path: String
        public var cryptogramSent: Bool

        public var description: String {
            let keys = body.members?.map(\.key).joined(separator: ", ") ?? ""
            return "MercuryPayForwarding.Forwarded(\(path), fields: [\(keys)], cryptogramSent: \(cryptogramSent))"
        }

        public var customMirror: Mirror {
            Mirror(self, children: ["path": path, "fields": body.members?.map(\.key) ?? [], "cryptogramSent": cryptogramSent])
        }
    }

    public static func upstreamRequest(
        _ request: MercuryPayRequest, card: ForwardedCardData, options: Options = Options()
    ) -> Forwarded {
        let original = request.body.members ?? []
        let recordIndex = original.firstIndex { $0.key == "RecordNo" } ?? original.count
        // The fields Paywarden fills are never the client's: a client's own cryptogram, ECI or account
        // source would claim an authentication the card never had.
        let replaced = Set(
            ["RecordNo", "TokenType"]
                + [options.cryptogramField, options.eciField, options.accountSource.map { _ in "AccountSource" }].compactMap { $0 })
        var members = original.filter { !replaced.contains($0.key) }
        let insertAt = original[..<recordIndex].filter { !replaced.contains($0.key) }.count
        var added: [ProcessorJSON.Member] = [
            .init("AcctNo", .string(card.accountNumber.revealed)), .init("ExpDate", .string(card.expirationMMYY)),
        ]
        if let field = options.accountSource { added.append(.init("AccountSource", .string(field))) }
        var cryptogramSent = false
        if let field = options.cryptogramField, let cryptogram = card.cryptogram?.revealed {
            added.append(.init(field, .string(cryptogram)))
            cryptogramSent = true
        }
        if let field = options.eciField, let eci = card.eci { added.append(.init(field, .string(eci))) }
        let addedKeys = Set(added.map(\.key))
        let before = members[..<insertAt].filter { !addedKeys.contains($0.key) }
        let after = members[insertAt...].filter { !addedKeys.contains($0.key) }
        members = before + added + after
        return Forwarded(body: .object(members), path: request.operation.upstreamPath, cryptogramSent: cryptogramSent)
    }
}
