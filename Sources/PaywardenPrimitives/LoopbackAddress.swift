/// Hosts that name this machine's loopback interface, as settings that allow cleartext to
/// loopback only accept them: `localhost`, `::1` (with or without brackets) and 127.0.0.0/8 in
/// dotted decimal.
public enum LoopbackAddress {
    /// The numeric address `host` names (`127.0.0.1` for `localhost`), or nil when it is not a
    /// loopback host. Dotted decimal is written anew from its numbers, as a socket takes it
    /// (`127.000.0.1` is `127.0.0.1`).
    public static func numeric(_ host: String) -> String? {
        var bare = Substring(host.lowercased())
        if bare.hasPrefix("["), bare.hasSuffix("]") { bare = bare.dropFirst().dropLast() }
        if bare == "localhost" { return "127.0.0.1" }
        if bare == "::1" { return "::1" }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false)
        let numbers = octets.compactMap { UInt8($0) }
        guard octets.count == 4, octets[0] == "127", numbers.count == 4 else { return nil }
        return numbers.map(String.init).joined(separator: ".")
    }
}
