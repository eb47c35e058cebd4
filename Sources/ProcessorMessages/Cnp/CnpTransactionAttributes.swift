/// The attributes every cnpAPI transaction carries (`transactionTypeWithReportGroup`), echoed on its
/// response.
public struct CnpTransactionAttributes: Sendable, Hashable {
    public var id: String
    public var reportGroup: String
    public var customerId: String?

    public init(id: String, reportGroup: String, customerId: String? = nil) {
        self.id = id
        self.reportGroup = reportGroup
        self.customerId = customerId
    }

    static func parse(_ element: ProcessorXML.Element, dialect: CnpDialect) throws(ProcessorMessageError) -> CnpTransactionAttributes {
        let reader = dialect.reader
        let path = element.name.localName
        let id = try reader.requiredAttribute(element, "id", path: path, max: CnpSchema.idMaximum(dialect))
        let reportGroup = try reader.requiredAttribute(element, "reportGroup", path: path, max: CnpSchema.reportGroupMaximum)
        let customerId = try reader.optionalAttribute(element, "customerId", path: path, max: CnpSchema.customerIdMaximum)
        return CnpTransactionAttributes(id: id, reportGroup: reportGroup, customerId: customerId)
    }

    /// Writes the attributes onto a response element, in the schema's order.
    func apply(to element: inout ProcessorXML.Element) {
        element.setAttribute("id", value: id)
        element.setAttribute("reportGroup", value: reportGroup)
        if let customerId { element.setAttribute("customerId", value: customerId) }
    }
}
