import ProcessorMessages

extension ProcessorUpstreamStandIn {
    /// How a compromised upstream hands back the account number and cryptogram it received, beside
    /// an approval (``Answer/approveEchoing(_:)``), so a test can show the relay's reply rewriters
    /// keep both from the client in every form the parsers yield.
    ///
    /// XML forms go into an extra `ProcessorNote` element of the transaction's response (cnpAPI) or
    /// of `CreditCardAuthReply` (Radial), where the rewriters keep what they do not know. JSON has
    /// no CDATA, comment or attribute: MercuryPay answers those forms as ``nestedField``.
    public enum CardDataEcho: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        /// Both in a CDATA section.
        case cdata
        /// Both split by an empty comment inside the element's text (`445711<!---->9922390123`).
        case commentSplit
        /// Both in comments before and after the root element.
        case commentOutsideRoot
        /// Both as attribute values.
        case attribute
        /// Both in elements (JSON: an array and an object) nested in the reply.
        case nestedField
        /// The account number in groups of four and the cryptogram broken by a line feed.
        case separated
        /// The account number's first half in one element (JSON: field), the rest in the next:
        /// nothing can mask it, so the relay must refuse the reply.
        case splitAcrossFields
        /// JSON: the account number as a member name and as a number (XML: in an element name),
        /// which cannot be masked either.
        case nameOrNumber

        /// The forms the relay can mask, keeping the reply; the others make it refuse the reply.
        public var isMaskable: Bool { self != .splitAcrossFields && self != .nameOrNumber }

        public var description: String { rawValue }

        /// The XML echo of `accountNumber` and `cryptogram`: the extra elements, and the comments
        /// before and after the root.
        func xml(accountNumber: String, cryptogram: String) -> (elements: String, prolog: String, epilog: String) {
            let number = Array(accountNumber)
            let (head, tail) = (String(number.prefix(6)), String(number.dropFirst(6)))
            let halves = (String(number.prefix(number.count / 2)), String(number.dropFirst(number.count / 2)))
            let cavv = Array(cryptogram)
            let (cavvHead, cavvTail) = (String(cavv.prefix(10)), String(cavv.dropFirst(10)))
            switch self {
            case .cdata:
                return ("<ProcessorNote><![CDATA[card \(accountNumber) cavv \(cryptogram)]]></ProcessorNote>", "", "")
            case .commentSplit:
                return ("<ProcessorNote>card \(head)<!---->\(tail) cavv \(cavvHead)<!-- -->\(cavvTail)</ProcessorNote>", "", "")
            case .commentOutsideRoot:
                return ("", "<!-- card \(accountNumber) -->", "<!-- card \(accountNumber) cavv \(cryptogram) -->")
            case .attribute:
                return (#"<ProcessorNote card="\#(accountNumber)" cavv="\#(cryptogram)"/>"#, "", "")
            case .nestedField:
                return (
                    "<ProcessorNote><Detail><Line>card \(accountNumber)</Line><Line>cavv \(cryptogram)</Line></Detail></ProcessorNote>", "",
                    ""
                )
            case .separated:
                let groups = stride(from: 0, to: number.count, by: 4).map { String(number[$0..<min($0 + 4, number.count)]) }
                return ("<ProcessorNote>card \(groups.joined(separator: " ")) cavv \(cavvHead)\n\(cavvTail)</ProcessorNote>", "", "")
            case .splitAcrossFields:
                return ("<ProcessorNote>\(halves.0)</ProcessorNote><ProcessorNote>\(halves.1)</ProcessorNote>", "", "")
            case .nameOrNumber:
                return ("<Card\(accountNumber)/>", "", "")
            }
        }

        /// The JSON members echoing `accountNumber` and `cryptogram`.
        func json(accountNumber: String, cryptogram: String) -> [ProcessorJSON.Member] {
            let number = Array(accountNumber)
            let halves = (String(number.prefix(number.count / 2)), String(number.dropFirst(number.count / 2)))
            switch self {
            case .cdata, .commentSplit, .commentOutsideRoot, .attribute, .nestedField:
                return [
                    .init(
                        "Detail",
                        .object([
                            .init("Lines", .array([.string("card \(accountNumber)"), .object([.init("Cavv", .string(cryptogram))])]))
                        ]))
                ]
            case .separated:
                let groups = stride(from: 0, to: number.count, by: 4).map { String(number[$0..<min($0 + 4, number.count)]) }
                let cavv = Array(cryptogram)
                return [
                    .init("Memo", .string("card \(groups.joined(separator: " "))")),
                    .init("Note", .string(String(cavv.prefix(10)) + "\n" + String(cavv.dropFirst(10)))),
                ]
            case .splitAcrossFields:
                return [.init("NoteA", .string(halves.0)), .init("NoteB", .string(halves.1))]
            case .nameOrNumber:
                return [.init(accountNumber, .string("card")), .init("Reference", .number(accountNumber))]
            }
        }
    }
}
