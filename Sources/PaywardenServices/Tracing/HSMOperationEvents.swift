import PKCS11
import Tracing

/// Turns each HSM key operation (``HSMOperationRecord``, from PKCS11's observer hook, which keeps
/// that module free of any tracing dependency) into an event of the request's span
/// (``RequestSpanEvents``): its name is the operation, its attributes the mechanism path, the
/// dispatch, the queue wait and the duration. Operations outside a traced request (the background
/// services' checks) record nothing.
public enum HSMOperationEvents {
    public static let observer: @Sendable (HSMOperationRecord) -> Void = { record in
        var attributes = SpanAttributes()
        attributes["paywarden.hsm.operation"] = record.operation
        if let path = record.path { attributes["paywarden.hsm.path"] = path }
        attributes["paywarden.hsm.dispatch"] = record.queueWait == nil ? "inline" : "pool"
        if let wait = record.queueWait { attributes["paywarden.hsm.queue_wait_us"] = Int(wait / .microseconds(1)) }
        attributes["paywarden.duration_us"] = Int(record.duration / .microseconds(1))
        if record.failed { attributes["paywarden.failed"] = true }
        RequestSpanEvents.record(
            "hsm.\(record.operation)", at: DefaultTracerClock.Timestamp(nanosecondsSinceEpoch: record.startNanosecondsSinceEpoch),
            attributes)
    }
}
