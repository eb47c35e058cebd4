/// Field rules for MercuryPay requests. MercuryPay's field reference (developer.vantiv.com DOC-1338,
/// "MercuryPay RESTful eCommerce Transactions") is not in the stored public material beyond its
/// introduction, so the lengths here are Paywarden's, chosen from what is public and adjustable:
/// - amounts: decimal strings with exactly two places, as every MercuryPay sample sends them
///   ("1.01", "1.00": MercuryPay/REST.Nodejs; "0.00"-formatted: wix-playground/libpay-mercurypay
///   Conversions.scala);
/// - InvoiceNo: 1–10 characters; MercuryPay's samples use short numbers ("1", "291", "123456") and the
///   only public length found for this API family is 10 (Mntry/Pay CREDIT.md, "InvoiceNo String 10");
/// - OperatorID: 1–50; MercuryPay's own sample sends 31 characters ("REST Node.js GitHub Sample Code");
/// - RecordNo: a registration ID up to 512 characters (cnpAPI string512Type, docs/vault.md, "Registration IDs"), an
///   OmniToken 13–19 digits (Format T and D keep the PAN's length, docs/vault.md, "High-value tokens").
public struct MercuryPayLimits: Sendable, Hashable {
    public var invoiceNoMaximum: Int
    public var operatorIDMaximum: Int
    public var amountIntegerDigitsMaximum: Int
    public var registrationIDMaximum: Int

    public init(
        invoiceNoMaximum: Int = 10, operatorIDMaximum: Int = 50, amountIntegerDigitsMaximum: Int = 7, registrationIDMaximum: Int = 512
    ) {
        self.invoiceNoMaximum = invoiceNoMaximum
        self.operatorIDMaximum = operatorIDMaximum
        self.amountIntegerDigitsMaximum = amountIntegerDigitsMaximum
        self.registrationIDMaximum = registrationIDMaximum
    }

    public static let `default` = MercuryPayLimits()
}
