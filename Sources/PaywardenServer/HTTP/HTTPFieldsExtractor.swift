import HTTPTypes
import Tracing

/// Reads a caller's W3C `traceparent` from a request's header fields, and never its `tracestate`:
/// vendors' state a caller wrote would otherwise travel on to Apple and the processors under
/// Paywarden's mutual-TLS identity.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        guard key.lowercased() != "tracestate", let name = HTTPField.Name(key) else { return nil }
        return fields[name]
    }
}
