import Tracing

/// The steps inside a request (the decryption, its replay claim, each HSM operation) as events of
/// the request's span, with their durations as attributes, rather than as spans of their own.
///
/// Why: each span costs its start and its end a trip through the tracer's and the batch
/// processor's queues (two task wake-ups and a locked table), about 60 µs of CPU a span on two
/// cores; four spans a decryption cost a quarter of the throughput (docs/operations.md,
/// "Performance"). An event is an append to the span already open. Calls that leave the process
/// (Apple, a processor) keep spans of their own: their context travels in `traceparent`.
public enum RequestSpanEvents {
    /// Adds the event `name` at `time` to the span active in the current context, if any is
    /// recording (the attributes are not even made otherwise). Attribute values name kinds and
    /// outcomes only, never request data.
    public static func record(
        _ name: String, at time: DefaultTracerClock.Timestamp = DefaultTracerClock.now, _ attributes: @autoclosure () -> SpanAttributes
    ) {
        guard let span = activeSpan else { return }
        span.addEvent(SpanEvent(name: name, at: time, attributes: attributes()))
    }

    /// Sets `value` as the attribute `name` of the span active in the current context, if any.
    public static func setAttribute(_ name: String, _ value: SpanAttributeConvertible) {
        activeSpan?.attributes[name] = value.toSpanAttribute()
    }

    /// The recording span of the current context (swift-otel's tracer keeps a table of them).
    private static var activeSpan: (any Span)? {
        guard let context = ServiceContext.current, let span = InstrumentationSystem.tracer.activeSpan(identifiedBy: context),
            span.isRecording
        else { return nil }
        return span
    }
}
