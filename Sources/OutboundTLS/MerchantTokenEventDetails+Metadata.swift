extension MerchantTokenEventDetails {
    /// `merchantTokenMetadata`: card art and card metadata, each optional.
    public struct Metadata: Sendable, Equatable {
        public struct CardArt: Sendable, Equatable {
            public let name: String?
            public let type: String?
            /// https, at most 2048 bytes.
            public let url: String

            public init(name: String?, type: String?, url: String) {
                self.name = name
                self.type = type
                self.url = url
            }
        }

        public struct CardMetadata: Sendable, Equatable {
            public let cardCountry: String?
            /// Format undocumented: stored as given (at most 8 characters).
            public let expirationDate: String?
            /// At most 4 digits.
            public let fpanSuffix: String?
            public let longDescription: String?
            public let shortDescription: String?

            public init(
                cardCountry: String? = nil, expirationDate: String? = nil, fpanSuffix: String? = nil, longDescription: String? = nil,
                shortDescription: String? = nil
            ) {
                self.cardCountry = cardCountry
                self.expirationDate = expirationDate
                self.fpanSuffix = fpanSuffix
                self.longDescription = longDescription
                self.shortDescription = shortDescription
            }
        }

        public let cardArt: [CardArt]?
        public let cardMetadata: CardMetadata?

        public init(cardArt: [CardArt]?, cardMetadata: CardMetadata?) {
            self.cardArt = cardArt
            self.cardMetadata = cardMetadata
        }

        init(_ fields: JSONFields) throws(AppleGatewayError) {
            if let entries = try fields.array("cardArt", maximum: 16) {
                var cardArt: [CardArt] = []
                for entry in entries {
                    let url = try entry.string("url", maximum: 2048, required: true)!
                    guard url.lowercased().hasPrefix("https://"), !GatewayField.hasControlCharacters(url) else {
                        throw AppleGatewayError(.responseInvalid, "Apple's event details: \(entry.path).url is not an https URL")
                    }
                    cardArt.append(
                        CardArt(name: try entry.string("name", maximum: 256), type: try entry.string("type", maximum: 64), url: url))
                }
                self.cardArt = cardArt
            } else {
                self.cardArt = nil
            }
            if let card = try fields.object("cardMetadata") {
                let suffix = try card.string("fpanSuffix", maximum: 4)
                if let suffix, !suffix.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                    throw AppleGatewayError(.responseInvalid, "Apple's event details: cardMetadata.fpanSuffix is not digits")
                }
                self.cardMetadata = CardMetadata(
                    cardCountry: try card.string("cardCountry", maximum: 16),
                    expirationDate: try card.string("expirationDate", maximum: 8),
                    fpanSuffix: suffix,
                    longDescription: try card.string("longDescription", maximum: 256),
                    shortDescription: try card.string("shortDescription", maximum: 256)
                )
            } else {
                self.cardMetadata = nil
            }
        }

        /// As JSONSerialization takes it; absent fields stay absent.
        var jsonObject: [String: Any] {
            var object: [String: Any] = [:]
            if let cardArt {
                object["cardArt"] = cardArt.map { art -> [String: Any] in
                    var entry: [String: Any] = ["url": art.url]
                    if let name = art.name { entry["name"] = name }
                    if let type = art.type { entry["type"] = type }
                    return entry
                }
            }
            if let card = cardMetadata {
                var entry: [String: Any] = [:]
                let pairs: [(String, String?)] = [
                    ("cardCountry", card.cardCountry), ("expirationDate", card.expirationDate), ("fpanSuffix", card.fpanSuffix),
                    ("longDescription", card.longDescription), ("shortDescription", card.shortDescription),
                ]
                for (key, value) in pairs { if let value { entry[key] = value } }
                object["cardMetadata"] = entry
            }
            return object
        }
    }
}
