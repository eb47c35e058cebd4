import Foundation

/// A span as an OTLP exporter sent it, decoded from `ExportTraceServiceRequest` protobuf by hand
/// (``ProtobufReader``; swift-otel's generated types are internal to it): the fields a test
/// checks, the attributes' values as text.
public struct ExportedSpan: Sendable, Hashable {
    public var traceID: [UInt8] = []
    public var spanID: [UInt8] = []
    public var parentSpanID: [UInt8] = []
    public var name = ""
    /// OTLP's SpanKind: 1 internal, 2 server, 3 client.
    public var kind = 0
    public var attributes: [String: String] = [:]
    /// The W3C tracestate the span carries (empty for none).
    public var traceState = ""
    /// The trace ids of the span's links, lowercase hex.
    public var linkedTraceIDs: [String] = []
    /// The span's events, in the order they were added.
    public var events: [Event] = []

    /// A span event: its name, time and attributes (values as text).
    public struct Event: Sendable, Hashable {
        public var name = ""
        public var timeUnixNanoseconds: UInt64 = 0
        public var attributes: [String: String] = [:]
    }

    /// The first event whose name `name` accepts.
    public func event(_ name: (String) -> Bool) -> Event? {
        events.first { name($0.name) }
    }

    /// Lowercase hex, as in `traceparent`.
    public var traceIDHex: String { traceID.map { String(format: "%02x", $0) }.joined() }
    public var spanIDHex: String { spanID.map { String(format: "%02x", $0) }.joined() }

    /// ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1 }; ResourceSpans
    /// { repeated ScopeSpans scope_spans = 2 }; ScopeSpans { repeated Span spans = 2 }.
    public static func decode(exportTraceServiceRequest bytes: [UInt8]) throws -> [ExportedSpan] {
        var spans: [ExportedSpan] = []
        for resourceSpans in try ProtobufReader.messages(1, in: bytes) {
            for scopeSpans in try ProtobufReader.messages(2, in: resourceSpans) {
                for span in try ProtobufReader.messages(2, in: scopeSpans) { spans.append(try ExportedSpan(span: span)) }
            }
        }
        return spans
    }

    /// Span { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3; bytes parent_span_id = 4;
    /// string name = 5; SpanKind kind = 6; repeated KeyValue attributes = 9; repeated Event events = 11;
    /// repeated Link links = 13 }; Event { fixed64 time_unix_nano = 1; string name = 2; repeated
    /// KeyValue attributes = 3; … }; Link { bytes trace_id = 1; bytes span_id = 2; … }.
    init(span bytes: [UInt8]) throws {
        for field in try ProtobufReader.fields(bytes) {
            switch (field.number, field.value) {
            case (1, .bytes(let value)): traceID = value
            case (2, .bytes(let value)): spanID = value
            case (3, .bytes(let value)): traceState = String(decoding: value, as: UTF8.self)
            case (13, .bytes(let value)):
                for inner in try ProtobufReader.fields(value) {
                    if inner.number == 1, case .bytes(let id) = inner.value {
                        linkedTraceIDs.append(id.map { String(format: "%02x", $0) }.joined())
                    }
                }
            case (4, .bytes(let value)): parentSpanID = value
            case (5, .bytes(let value)): name = String(decoding: value, as: UTF8.self)
            case (6, .varint(let value)): kind = Int(value)
            case (9, .bytes(let value)):
                let (key, text) = try Self.attribute(value)
                attributes[key] = text
            case (11, .bytes(let value)):
                var event = Event()
                for inner in try ProtobufReader.fields(value) {
                    switch (inner.number, inner.value) {
                    case (1, .fixed64(let time)): event.timeUnixNanoseconds = time
                    case (2, .bytes(let name)): event.name = String(decoding: name, as: UTF8.self)
                    case (3, .bytes(let attribute)):
                        let (key, text) = try Self.attribute(attribute)
                        event.attributes[key] = text
                    default: break
                    }
                }
                events.append(event)
            default: break
            }
        }
    }

    /// KeyValue { string key = 1; AnyValue value = 2 }; AnyValue { string string_value = 1;
    /// bool bool_value = 2; int64 int_value = 3; double double_value = 4; … }.
    private static func attribute(_ bytes: [UInt8]) throws -> (String, String) {
        var key = ""
        var text = ""
        for field in try ProtobufReader.fields(bytes) {
            switch (field.number, field.value) {
            case (1, .bytes(let value)): key = String(decoding: value, as: UTF8.self)
            case (2, .bytes(let value)):
                for inner in try ProtobufReader.fields(value) {
                    switch (inner.number, inner.value) {
                    case (1, .bytes(let string)): text = String(decoding: string, as: UTF8.self)
                    case (2, .varint(let flag)): text = flag != 0 ? "true" : "false"
                    case (3, .varint(let integer)): text = "\(Int64(bitPattern: integer))"
                    case (4, .fixed64(let bits)): text = "\(Double(bitPattern: bits))"
                    default: text = "<other>"
                    }
                }
            default: break
            }
        }
        return (key, text)
    }
}
