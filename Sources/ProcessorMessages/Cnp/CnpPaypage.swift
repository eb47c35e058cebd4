/// `cardPaypageType`: `paypageRegistrationId`, `expDate`?, `cardValidationNum`?, `type`?.
///
/// The card verification number, when sent, stays in the message (it is moved into the upstream's
/// `card`); this model only records that it was there, so it never sits in a long-lived value.
public struct CnpPaypage: Sendable, Hashable {
    public var paypageRegistrationId: String
    /// MMYY, when the merchant sent one (it overrides nothing: the decrypted expiry is what is forwarded).
    public var expDate: String?
    public var hasCardValidationNum: Bool
    /// A `methodOfPaymentTypeEnum` code.
    public var type: String?

    public init(paypageRegistrationId: String, expDate: String? = nil, hasCardValidationNum: Bool = false, type: String? = nil) {
        self.paypageRegistrationId = paypageRegistrationId
        self.expDate = expDate
        self.hasCardValidationNum = hasCardValidationNum
        self.type = type
    }

    static func parse(_ element: ProcessorXML.Element, path: String, dialect: CnpDialect) throws(ProcessorMessageError) -> CnpPaypage {
        let reader = dialect.reader
        let names = ["paypageRegistrationId", "expDate", "cardValidationNum", "type"]
        try reader.checkSequence(element, names, optional: Set(names.dropFirst()), path: path)
        let registrationId = try reader.requiredValue(
            element, "paypageRegistrationId", path: path, max: CnpSchema.paypageRegistrationIdMaximum)
        let expDate = try reader.optionalValue(element, "expDate", path: path, max: 4)
        if let expDate {
            try reader.rules.digits(expDate, "\(path)/expDate", count: 4...4)
            guard let month = Int(expDate.prefix(2)), (1...12).contains(month) else {
                throw ProcessorMessageError(
                    .cnpAPI, .invalidValue, field: "\(path)/expDate", "\(path)/expDate must be MMYY with a month 01–12")
            }
        }
        let cvv = try reader.optionalValue(element, "cardValidationNum", path: path, min: 0, max: CnpSchema.cardValidationNumMaximum)
        let type = try reader.optionalValue(element, "type", path: path, min: 0, max: 2)
        if let type { try reader.rules.oneOf(type, "\(path)/type", CnpSchema.methodsOfPayment) }
        return CnpPaypage(paypageRegistrationId: registrationId, expDate: expDate, hasCardValidationNum: cvv != nil, type: type)
    }
}
