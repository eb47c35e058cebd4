import NIOHTTP1
import Tracing

/// Writes the active span's context (W3C `traceparent`, and `tracestate` when there is one) into
/// an outbound request's headers, so Apple's or a processor's logs can be joined to ours. Only ids
/// and sampling flags travel: the instrument writes nothing else.
public struct TraceContextHeadersInjector: Injector {
    public init() {}

    public func inject(_ value: String, forKey key: String, into headers: inout HTTPHeaders) {
        headers.replaceOrAdd(name: key, value: value)
    }

    /// Injects the context of `span` into `headers`.
    public static func inject(_ span: any Span, into headers: inout HTTPHeaders) {
        InstrumentationSystem.instrument.inject(span.context, into: &headers, using: TraceContextHeadersInjector())
    }
}
