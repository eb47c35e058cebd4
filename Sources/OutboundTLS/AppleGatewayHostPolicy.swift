import Foundation

/// The hosts Paywarden may open a mutual-TLS connection to (docs/apple-pay.md, "Apple's hosts").
///
/// A validation URL comes from a browser, so everything about it is hostile until checked:
/// https only, a host on the list, no IP literal, no user info, no other port.
public struct AppleGatewayHostPolicy: Sendable {
    /// Apple's list (docs/apple-pay.md, "Apple's hosts").
    public static let appleHosts: [String] = [
        "apple-pay-gateway.apple.com",
        "apple-pay-gateway-nc-pod*.apple.com",
        "apple-pay-gateway-pr-pod*.apple.com",
        "apple-pay-gateway-cert.apple.com",
        "apple-pay-gateway-stage.apple.com",
        "cn-apple-pay-gateway.apple.com",
    ]

    /// The paths a browser's validation URL may have: the session request is POSTed there.
    public static let validationPaths: Set<String> = ["/paymentservices/startSession", "/paymentservices/paymentSession"]

    /// One allow-list entry: labels (the first may hold one `*`) and the one port allowed.
    private struct Pattern: Sendable {
        let firstLabel: (prefix: String, suffix: String, wildcard: Bool)
        let otherLabels: [String]
        let port: Int

        func matches(labels: [String], port: Int) -> Bool {
            guard port == self.port, labels.count == otherLabels.count + 1, Array(labels.dropFirst()) == otherLabels else {
                return false
            }
            let first = labels[0]
            guard firstLabel.wildcard else { return first == firstLabel.prefix }
            guard first.count > firstLabel.prefix.count + firstLabel.suffix.count,
                first.hasPrefix(firstLabel.prefix), first.hasSuffix(firstLabel.suffix)
            else { return false }
            // The wildcard stands for letters and digits only: no hyphen, so "pod5-evil" is out.
            let middle = first.dropFirst(firstLabel.prefix.count).dropLast(firstLabel.suffix.count)
            return middle.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        }
    }

    private let patterns: [Pattern]
    /// The entries as given, for messages and status pages.
    public let entries: [String]

    /// Entries are "host" (port 443 only) or "host:port"; `*` only inside the first label.
    public init(patterns entries: [String]) throws(AppleGatewayError) {
        var patterns: [Pattern] = []
        for entry in entries {
            patterns.append(try Self.parse(entry))
        }
        guard !patterns.isEmpty else {
            throw AppleGatewayError(.validationURLRefused, "the Apple gateway host allow-list is empty; list at least one host")
        }
        self.patterns = patterns
        self.entries = entries
    }

    private static func parse(_ entry: String) throws(AppleGatewayError) -> Pattern {
        func refuse(_ why: String) -> AppleGatewayError {
            AppleGatewayError(.validationURLRefused, "Apple gateway host allow-list entry \"\(entry.prefix(80))\": \(why)")
        }
        let text = entry.lowercased()
        var host = text
        var port = 443
        if text.hasPrefix("[") || text.filter({ $0 == ":" }).count > 1 { throw refuse("IP addresses are not allowed, name a host") }
        if let colon = text.firstIndex(of: ":") {
            host = String(text[..<colon])
            guard let number = Int(text[text.index(after: colon)...]), (1...65535).contains(number) else {
                throw refuse("the port is not a number from 1 to 65535")
            }
            port = number
        }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !host.isEmpty, labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 }) else { throw refuse("not a host name") }
        guard !isIPLiteral(host) else { throw refuse("IP addresses are not allowed, name a host") }
        let allowed = { (c: Character) in c.isASCII && (c.isLetter || c.isNumber || c == "-") }
        guard labels.dropFirst().allSatisfy({ $0.allSatisfy(allowed) }) else {
            throw refuse("only letters, digits and hyphens are allowed, and \"*\" only in the first label")
        }
        let first = labels[0]
        let stars = first.filter { $0 == "*" }.count
        guard stars <= 1, first.allSatisfy({ allowed($0) || $0 == "*" }) else {
            throw refuse("only letters, digits and hyphens are allowed, and at most one \"*\" in the first label")
        }
        if stars == 0 { return Pattern(firstLabel: (first, "", false), otherLabels: Array(labels.dropFirst()), port: port) }
        // A bare "*" would let any single label through (including numeric hosts): refused.
        guard first != "*", labels.count >= 3 else {
            throw refuse("a wildcard must be part of a label of a host under a domain, e.g. apple-pay-gateway-nc-pod*.apple.com")
        }
        let star = first.firstIndex(of: "*")!
        return Pattern(
            firstLabel: (String(first[..<star]), String(first[first.index(after: star)...]), true),
            otherLabels: Array(labels.dropFirst()), port: port)
    }

    /// Whether `host` is (or resolvers would read it as) an IP address: IPv6 in any form, dotted
    /// or integer IPv4, hexadecimal and octal forms alike (the last label is numeric).
    static func isIPLiteral(_ host: String) -> Bool {
        if host.contains(":") || host.contains("[") || host.contains("]") { return true }
        guard let last = host.split(separator: ".", omittingEmptySubsequences: false).last else { return false }
        if !last.isEmpty && last.allSatisfy(\.isNumber) { return true }
        let lower = last.lowercased()
        return lower.hasPrefix("0x") && lower.dropFirst(2).allSatisfy(\.isHexDigit)
    }

    /// https only, no user info, no fragment, no IP literal, and a host and port on the list.
    public func check(_ url: URL) throws(AppleGatewayError) {
        func refuse(_ why: String) -> AppleGatewayError {
            AppleGatewayError(.validationURLRefused, "the URL is refused: \(why)")
        }
        guard url.scheme?.lowercased() == "https" else { throw refuse("only https is allowed") }
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { throw refuse("it is not a valid URL") }
        guard components.user == nil, components.password == nil else { throw refuse("user information is not allowed") }
        guard components.fragment == nil else { throw refuse("a fragment is not allowed") }
        guard let encodedHost = components.percentEncodedHost, !encodedHost.isEmpty else { throw refuse("it names no host") }
        guard !encodedHost.contains("%") else { throw refuse("a percent-encoded host is not allowed") }
        let host = encodedHost.lowercased()
        guard !Self.isIPLiteral(host) else { throw refuse("IP addresses are not allowed") }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let port = components.port ?? 443
        guard patterns.contains(where: { $0.matches(labels: labels, port: port) }) else {
            throw refuse(
                components.port == nil || port == 443
                    ? "\(host) is not one of Apple's Apple Pay gateway hosts" : "port \(port) of \(host) is not allowed")
        }
    }

    /// The browser's validation URL → the URL to POST the session request to, refused unless it
    /// is a gateway host's startSession or paymentSession path with no query. Checked before
    /// any connection is made.
    public func validationEndpoint(_ validationURL: String) throws(AppleGatewayError) -> URL {
        func refuse(_ why: String) -> AppleGatewayError {
            AppleGatewayError(.validationURLRefused, "the validation URL is refused: \(why)")
        }
        guard validationURL.utf8.count <= 2048 else { throw refuse("it is longer than 2048 bytes") }
        // Whitespace, control characters and backslashes are where parsers disagree about hosts.
        guard validationURL.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "\\" }) else {
            throw refuse("it holds characters a URL may not hold")
        }
        guard let url = URL(string: validationURL), let components = URLComponents(string: validationURL) else {
            throw refuse("it is not a valid URL")
        }
        try check(url)
        guard components.percentEncodedQuery == nil else { throw refuse("a query is not allowed") }
        guard Self.validationPaths.contains(components.percentEncodedPath) else {
            throw refuse("the path must be /paymentservices/startSession or /paymentservices/paymentSession")
        }
        var endpoint = URLComponents()
        endpoint.scheme = "https"
        endpoint.host = components.percentEncodedHost?.lowercased()
        if let port = components.port, port != 443 { endpoint.port = port }
        endpoint.percentEncodedPath = components.percentEncodedPath
        guard let result = endpoint.url else { throw refuse("it is not a valid URL") }
        return result
    }
}
