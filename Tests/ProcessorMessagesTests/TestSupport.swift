import Foundation
import Testing

@testable import ProcessorMessages

enum Fixture {
    static func bytes(_ name: String) throws -> [UInt8] {
        let parts = name.split(separator: ".", maxSplits: 1)
        let url = try #require(Bundle.module.url(forResource: String(parts[0]), withExtension: String(parts[1]), subdirectory: "Fixtures"))
        return Array(try Data(contentsOf: url))
    }

    static func text(_ name: String) throws -> String {
        String(decoding: try bytes(name), as: UTF8.self)
    }
}

enum TestCards {
    /// A Visa test number (never a real account).
    static let pan = "4761739001010010"
    static let cryptogram = "AgAAAAAABk4DWZ4C28yUQAAAAAA="

    static func applePay() throws -> ForwardedCardData {
        try ForwardedCardData(accountNumber: pan, expirationYYMMDD: "301231", cryptogram: cryptogram, eci: "07")
    }
}

extension ProcessorXML.Element {
    /// Local names of the child elements, in order.
    var childNames: [String] { childElements.map(\.name.localName) }
}

/// The error a throwing call raised, for `#expect(error(…)?.code == …)`.
func messageError(_ body: () throws -> Void) -> ProcessorMessageError? {
    do {
        try body()
        return nil
    } catch let error as ProcessorMessageError {
        return error
    } catch {
        Issue.record("unexpected error type: \(error)")
        return nil
    }
}

func serialized(_ document: ProcessorXML.Document) -> String {
    String(decoding: ProcessorXML.serialize(document), as: UTF8.self)
}
