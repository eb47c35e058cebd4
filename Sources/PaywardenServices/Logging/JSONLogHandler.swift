import Foundation
import Logging
import PaywardenPrimitives

/// `PAYWARDEN_LOG_FORMAT=json`: one JSON object a line, for a log collector. Fields: `time` (RFC
/// 3339, UTC, milliseconds), `level`, `label`, `source`, `message`, `request_id` (Hummingbird's
/// request id), `trace_id` and `span_id` when a span is active (from the metadata provider), and
/// `metadata`, every other key, with lists and dictionaries as JSON arrays and objects.
///
/// It writes what the code logs, nothing more: the same metadata as the text format, which the
/// redaction tests search in both renderings.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let stream: any TextOutputStream & Sendable

    /// Metadata keys that become top-level fields, and the field each becomes.
    static let promoted: [(key: String, field: String)] = [
        ("hb.request.id", "request_id"), ("trace_id", "trace_id"), ("span_id", "span_id"),
    ]

    public init(label: String, stream: any TextOutputStream & Sendable, metadataProvider: Logger.MetadataProvider?) {
        self.label = label
        self.stream = stream
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let explicit = event.metadata { merged.merge(explicit) { $1 } }
        var line = Self.line(
            time: Date(), level: event.level, label: label, source: event.source, message: event.message.description, metadata: merged)
        line.append(0x0A)
        var stream = stream
        stream.write(String(decoding: line, as: UTF8.self))
    }

    /// The object for one event, without the newline.
    static func line(time: Date, level: Logger.Level, label: String, source: String, message: String, metadata: Logger.Metadata)
        -> [UInt8]
    {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        func field(_ name: String, _ value: String, first: Bool = false) {
            if !first { output.append(UInt8(ascii: ",")) }
            JSONString.append(name, to: &output)
            output.append(UInt8(ascii: ":"))
            JSONString.append(value, to: &output)
        }
        output.append(UInt8(ascii: "{"))
        field("time", timestamp(time), first: true)
        field("level", level.rawValue)
        field("label", label)
        field("source", source)
        field("message", message)
        var rest = metadata
        for (key, name) in promoted {
            guard let value = rest.removeValue(forKey: key) else { continue }
            field(name, value.description)
        }
        output += Array(",\"metadata\":".utf8)
        append(.dictionary(rest), to: &output)
        output.append(UInt8(ascii: "}"))
        return output
    }

    /// Keys sorted, so a line reads the same way each time.
    static func append(_ value: Logger.Metadata.Value, to output: inout [UInt8]) {
        switch value {
        case .string(let text): JSONString.append(text, to: &output)
        case .stringConvertible(let value): JSONString.append(value.description, to: &output)
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                append(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            output.append(UInt8(ascii: "{"))
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONString.append(key, to: &output)
                output.append(UInt8(ascii: ":"))
                append(entries[key]!, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// `2026-11-25T10:00:00.123Z`.
    static func timestamp(_ time: Date) -> String {
        let milliseconds = Int((time.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = milliseconds - seconds * 1000
        let digits = String(fraction)
        return UTCDateTime.text(secondsSince1970: seconds, zone: "") + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }
}
