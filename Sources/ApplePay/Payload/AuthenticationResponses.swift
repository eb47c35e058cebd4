import PaywardenPrimitives

/// The reader of a payload's `authenticationResponses`, stricter than Apple's documentation needs
/// because a cryptogram chosen by the wrong entry authorises the wrong merchant: every entry is an
/// object with the three fields Apple lists, amounts are minor units, no two entries share a
/// merchant identifier (entries Paywarden could not tell apart are refused, not guessed between),
/// and their sum is no more than the payment's `transactionAmount`, as Apple's request side
/// requires of the contexts. Members Apple may add later are ignored.
enum AuthenticationResponses {
    /// More than any payment sheet has shown; Apple states no limit.
    static let maximumCount = 64
    /// Apple's sample identifiers are 64 characters.
    static let maximumIdentifierLength = 128
    /// A network cryptogram is 28 Base64 characters; this allows any network's longer form.
    static let maximumCryptogramLength = 1024
    /// Twelve digits of minor units: far beyond any authorisation, and safe in an `Int64` sum.
    static let maximumAmountDigits = 12

    static func read(_ value: TokenJSON.Value, transactionAmount: String?) throws(PaymentTokenError) -> [AuthenticationResponse] {
        guard case .array(let elements) = value else { throw refused("is not an array") }
        guard !elements.isEmpty else { throw refused("is empty: a multi-merchant payment has at least one entry") }
        guard elements.count <= maximumCount else { throw refused("has \(elements.count) entries, more than \(maximumCount)") }
        var responses: [AuthenticationResponse] = []
        var identifiers: Set<String> = []
        var sum: Int64 = 0
        for (index, element) in elements.enumerated() {
            let response = try entry(element, index: index)
            // The relays' header names the payment's own cryptogram `coordinator`: an entry of that name would be ambiguous.
            guard response.merchantIdentifier.lowercased() != "coordinator" else {
                throw refused("entry \(index) is named `coordinator`, the name of the payment's own cryptogram")
            }
            guard identifiers.insert(response.merchantIdentifier.lowercased()).inserted else {
                throw refused("entry \(index) repeats another entry's merchantIdentifier, so the two cannot be told apart")
            }
            sum += Int64(response.transactionAmount) ?? 0
            responses.append(response)
        }
        guard let total = transactionAmount.flatMap(minorUnits) else {
            throw refused("cannot be checked: the payment's transactionAmount is not a whole number of minor units")
        }
        guard sum <= total else {
            throw refused("amounts add up to \(sum), more than the payment's transactionAmount \(total)")
        }
        return responses
    }

    private static func entry(_ element: TokenJSON.Value, index: Int) throws(PaymentTokenError) -> AuthenticationResponse {
        guard case .object(let object) = element else { throw refused("entry \(index) is not an object") }
        guard let identifier = object["merchantIdentifier"]?.text, (1...maximumIdentifierLength).contains(identifier.utf8.count),
            identifier.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw refused("entry \(index) has no merchantIdentifier of 1 to \(maximumIdentifierLength) visible ASCII characters")
        }
        guard let cryptogram = object["authenticationData"]?.text, isBase64(cryptogram) else {
            throw refused("entry \(index) has no authenticationData in Base64 of at most \(maximumCryptogramLength) characters")
        }
        guard let amount = object["transactionAmount"]?.textOrNumber, minorUnits(amount) != nil else {
            throw refused("entry \(index) has no transactionAmount in minor units (up to \(maximumAmountDigits) digits)")
        }
        return AuthenticationResponse(
            merchantIdentifier: identifier, authenticationData: Sensitive(cryptogram, hint: "cryptogram"), transactionAmount: amount)
    }

    private static func minorUnits(_ text: String) -> Int64? {
        guard (1...maximumAmountDigits).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(text)
    }

    /// The standard alphabet, padding only at the end.
    private static func isBase64(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...maximumCryptogramLength).contains(bytes.count) else { return false }
        let data = bytes.prefix { $0 != UInt8(ascii: "=") }
        let padding = bytes.count - data.count
        guard padding <= 2, bytes.suffix(padding).allSatisfy({ $0 == UInt8(ascii: "=") }) else { return false }
        return data.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "+"), UInt8(ascii: "/"):
                true
            default: false
            }
        }
    }

    private static func refused(_ why: String) -> PaymentTokenError {
        PaymentTokenError(.authenticationResponsesInvalid, "the decrypted payload's authenticationResponses \(why)")
    }
}
