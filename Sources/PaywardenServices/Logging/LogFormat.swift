import Logging

/// How log lines are written (`PAYWARDEN_LOG_FORMAT`): `text`, swift-log's own line (time, level,
/// label, `key=value` metadata, source, message), or `json`, one object a line for a collector.
public enum LogFormat: String, Sendable, CaseIterable {
    case text
    case json

    /// A handler writing this format's lines to `stream` (standard error in the service).
    public func handler(
        label: String, stream: any TextOutputStream & Sendable, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider
    ) -> any LogHandler {
        switch self {
        case .text: StreamLogHandler(label: label, stream: stream, metadataProvider: metadataProvider)
        case .json: JSONLogHandler(label: label, stream: stream, metadataProvider: metadataProvider)
        }
    }
}
