/// A strict-enough BER reader: definite and indefinite lengths, constructed strings, bounded
/// depth, and every length checked against the input before it is used.
enum BERReader {
    static let maximumDepth = 24

    /// Parses exactly one element spanning all of `bytes`.
    static func parse(_ bytes: [UInt8]) throws(BERError) -> BERNode {
        var offset = 0
        let node = try element(bytes, &offset, end: bytes.count, depth: 0)
        guard offset == bytes.count else { throw BERError("\(bytes.count - offset) bytes follow the outermost element") }
        return node
    }

    private static func element(_ bytes: [UInt8], _ offset: inout Int, end: Int, depth: Int) throws(BERError) -> BERNode {
        guard depth <= maximumDepth else { throw BERError("nested deeper than \(maximumDepth) levels") }
        let start = offset
        guard offset < end else { throw BERError("truncated: an element was expected") }
        let identifier = bytes[offset]
        offset += 1
        guard identifier & 0x1F != 0x1F else { throw BERError("high tag numbers do not occur in CMS") }
        let tagClass = BERNode.TagClass(rawValue: identifier >> 6)!
        let constructed = identifier & 0x20 != 0
        let tagNumber = identifier & 0x1F

        guard offset < end else { throw BERError("truncated: a length was expected") }
        let first = bytes[offset]
        offset += 1
        if first == 0x80 {
            // Indefinite length: children until the end-of-contents octets 00 00.
            guard constructed else { throw BERError("a primitive element cannot have an indefinite length") }
            let contentStart = offset
            var children: [BERNode] = []
            while true {
                guard offset + 1 < end else { throw BERError("truncated: end-of-contents is missing") }
                if bytes[offset] == 0, bytes[offset + 1] == 0 {
                    let contentEnd = offset
                    offset += 2
                    return BERNode(
                        tagClass: tagClass, depth: depth, tagNumber: tagNumber, isConstructed: true,
                        encoded: start..<offset, content: contentStart..<contentEnd, indefiniteChildren: children)
                }
                children.append(try element(bytes, &offset, end: end, depth: depth + 1))
            }
        }
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count <= 4 else { throw BERError("a length of \(count) octets is not supported") }
            guard offset + count <= end else { throw BERError("truncated: the length is cut short") }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[offset])
                offset += 1
            }
        }
        guard length <= end - offset else { throw BERError("truncated: the content is shorter than its length") }
        let contentStart = offset
        let contentEnd = offset + length
        offset = contentEnd
        return BERNode(
            tagClass: tagClass, depth: depth, tagNumber: tagNumber, isConstructed: constructed,
            encoded: start..<contentEnd, content: contentStart..<contentEnd, indefiniteChildren: nil)
    }

    /// The children of a constructed element (none for a primitive one).
    static func children(of node: BERNode, in bytes: [UInt8]) throws(BERError) -> [BERNode] {
        if let children = node.indefiniteChildren { return children }
        guard node.isConstructed else { return [] }
        var children: [BERNode] = []
        var offset = node.content.lowerBound
        while offset < node.content.upperBound {
            children.append(try element(bytes, &offset, end: node.content.upperBound, depth: node.depth + 1))
        }
        return children
    }
}

extension BERNode {
    /// The octets of a string type, joining the segments of a constructed (BER) string.
    func octets(in bytes: [UInt8]) throws(BERError) -> [UInt8] {
        guard isConstructed else { return Array(bytes[content]) }
        var joined: [UInt8] = []
        for child in try BERReader.children(of: self, in: bytes) {
            guard child.tagNumber == tagNumber || child.isUniversal(BERNode.octetString) else {
                throw BERError("a constructed string holds a foreign element")
            }
            joined += try child.octets(in: bytes)
        }
        return joined
    }

    /// The children, read from `bytes` (the input this node was parsed from).
    func children(in bytes: [UInt8]) throws(BERError) -> [BERNode] {
        try BERReader.children(of: self, in: bytes)
    }

    /// This element with a definite length and identifier `identifier`: how DER (and the CMS
    /// signature over signed attributes) sees it, provided the children are DER themselves.
    func reencoded(identifier: UInt8, in bytes: [UInt8]) throws(BERError) -> [UInt8] {
        var body: [UInt8] = []
        if let children = indefiniteChildren {
            for child in children { body += bytes[child.encoded] }
        } else {
            body = Array(bytes[content])
        }
        return [identifier] + derLength(body.count) + body
    }
}

/// DER length octets for `length`.
func derLength(_ length: Int) -> [UInt8] {
    if length < 0x80 { return [UInt8(length)] }
    var octets: [UInt8] = []
    var remaining = length
    while remaining > 0 {
        octets.insert(UInt8(remaining & 0xFF), at: 0)
        remaining >>= 8
    }
    return [0x80 | UInt8(octets.count)] + octets
}
