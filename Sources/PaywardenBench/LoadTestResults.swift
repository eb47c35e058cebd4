import Foundation

/// What `make loadtest` measured, as data: by run (`memory`, `sqlite`, `register-sqlite`,
/// `half-1`, …), each run's fields (`rate`, `p99`, `cpu_us`, `dispatch`, …), kept as JSON in the
/// work directory. Every measuring command adds its run; `LoadTestReport` reads them all.
///
/// `paywarden-bench loadtest-note WORK RUN NAME=VALUE…` adds fields to a run (what the script
/// alone knows: a run's settings); `paywarden-bench loadtest-value WORK RUN FIELD` prints one (what
/// the script needs to start the next run: a rate to halve, a body size).
struct LoadTestResults {
    private(set) var runs: [String: [String: String]]
    private let url: URL

    init(work: String) throws {
        url = URL(fileURLWithPath: work).appendingPathComponent("results.json")
        if let data = FileManager.default.contents(atPath: url.path) {
            runs = try JSONDecoder().decode([String: [String: String]].self, from: data)
        } else {
            runs = [:]
        }
    }

    /// Adds `fields` to `run` in WORK's results (one writer at a time: the script runs one
    /// measurement after another).
    static func record(_ run: String, _ fields: [String: String], work: String) throws {
        var results = try LoadTestResults(work: work)
        results.runs[run, default: [:]].merge(fields) { $1 }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        try encoder.encode(results.runs).write(to: results.url, options: .atomic)
    }

    func text(_ run: String, _ field: String) -> String? { runs[run]?[field] }

    func number(_ run: String, _ field: String) -> Double? { text(run, field).flatMap(Double.init) }

    /// The runs named `prefix-1`, `prefix-2`, … in order (the repeated open-loop runs).
    func series(_ prefix: String) -> [String] {
        (1...).lazy.map { "\(prefix)-\($0)" }.prefix { runs[$0] != nil }.map { $0 }
    }

    /// The `NAME=VALUE` words of a line (wrk's LOADTEST line, an engine line), other words skipped.
    static func fields(of line: some StringProtocol) -> [String: String] {
        var fields: [String: String] = [:]
        for word in line.split(separator: " ") {
            guard let equals = word.firstIndex(of: "="), equals != word.startIndex else { continue }
            fields[String(word[..<equals])] = String(word[word.index(after: equals)...])
        }
        return fields
    }

    static func note(_ arguments: [String]) throws {
        guard arguments.count >= 3 else { throw BenchError("usage: paywarden-bench loadtest-note WORK RUN NAME=VALUE…") }
        let fields = fields(of: arguments.dropFirst(2).joined(separator: " "))
        guard fields.count == arguments.count - 2 else { throw BenchError("loadtest-note: every field is NAME=VALUE, without spaces") }
        try record(arguments[1], fields, work: arguments[0])
    }

    static func value(_ arguments: [String]) throws {
        guard arguments.count == 3 else { throw BenchError("usage: paywarden-bench loadtest-value WORK RUN FIELD") }
        guard let value = try LoadTestResults(work: arguments[0]).text(arguments[1], arguments[2]) else {
            throw BenchError("no \(arguments[2]) recorded for the run \(arguments[1])")
        }
        print(value)
    }
}
