/// PhysicalAddressType (Checkout-Datatypes-1.0.xsd): `Line1`, `Line2`?, `Line3`?, `Line4`?, `City`,
/// `MainDivision`?, `CountryCode`, `PostalCode`?, `Extension`?. Radial's current samples write
/// `MainDivisionCode` where the 1.0 schema and eBay Enterprise's SDK write `MainDivision`; both are
/// accepted (one of them) and left as written.
public struct RadialAddress: Sendable, Hashable {
    public var lines: [String]
    public var city: String
    public var mainDivision: String?
    public var countryCode: String
    public var postalCode: String?

    static let order = ["Line1", "Line2", "Line3", "Line4", "City", "MainDivision", "CountryCode", "PostalCode", "Extension"]

    static func parse(_ element: ProcessorXML.Element, path: String) throws(ProcessorMessageError) -> RadialAddress {
        let reader = RadialSchema.reader
        let children = try reader.elements(of: element, path: path, allowForeign: true)
        var lastRank = -1
        var seen: Set<String> = []
        for child in children {
            let name = child.name.localName == "MainDivisionCode" ? "MainDivision" : child.name.localName
            guard let rank = order.firstIndex(of: name) else { throw reader.rules.unexpected("\(path)/\(child.name.localName)", in: path) }
            guard seen.insert(name).inserted else { throw reader.rules.duplicate("\(path)/\(child.name.localName)") }
            guard rank > lastRank else {
                throw ProcessorMessageError(
                    .radial, .outOfOrder, field: "\(path)/\(child.name.localName)", "\(path)/\(child.name.localName) is out of order")
            }
            lastRank = rank
        }
        func value(_ name: String, _ range: ClosedRange<Int>, required: Bool) throws(ProcessorMessageError) -> String? {
            let candidates = name == "MainDivision" ? ["MainDivision", "MainDivisionCode"] : [name]
            for candidate in candidates {
                if let found = try reader.optionalValue(element, candidate, path: path, min: range.lowerBound, max: range.upperBound) {
                    return found
                }
            }
            if required { throw reader.rules.missing("\(path)/\(name)") }
            return nil
        }
        var lines: [String] = []
        for number in 1...4 {
            if let line = try value("Line\(number)", RadialSchema.addressLineRange, required: number == 1) { lines.append(line) }
        }
        return RadialAddress(
            lines: lines,
            city: try value("City", RadialSchema.cityRange, required: true) ?? "",
            mainDivision: try value("MainDivision", RadialSchema.mainDivisionRange, required: false),
            countryCode: try value("CountryCode", RadialSchema.countryCodeRange, required: true) ?? "",
            postalCode: try value("PostalCode", RadialSchema.postalCodeRange, required: false)
        )
    }
}
