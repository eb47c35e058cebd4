import HTTPTypes
import Tracing

/// Reads a trace context (`traceparent`, `tracestate`) from a request's header fields.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from fields: HTTPFields) -> String? {
        guard let name = HTTPField.Name(key) else { return nil }
        return fields[name]
    }
}
