import Foundation

/// Runs `../shared/tools/hsm-bench` (built by `make bench`) against a token of its own in the
/// same SoftHSM store, and reads its operations per wall second.
struct RawHSMBench {
    let executable: String
    let label: String
    let pin: String

    /// `hsm_bench bench NAME SECONDS THREADS`; nil when the line cannot be read.
    func rate(_ name: String, seconds: Double, threads: Int) throws -> Double? {
        let output = try run(["-l", label, "-p", pin, "bench", name, String(seconds), String(threads)])
        // bench=ecdh  threads=1 ops=... wall=5.00s =>   6900 ops/s wall | ...
        guard let range = output.range(of: #"=>\s*([0-9.]+) ops/s wall"#, options: .regularExpression) else { return nil }
        let figure = output[range].split(whereSeparator: { $0 == " " }).dropFirst().first
        return figure.flatMap { Double($0) }
    }

    func createKeys() throws {
        _ = try run(["-l", label, "-p", pin, "keys"])
    }

    private func run(_ arguments: [String]) throws -> String {
        let (status, output) = try Self.output(of: executable, arguments)
        guard status == 0 else { throw BenchError("hsm_bench \(arguments.joined(separator: " ")) exited with \(status)") }
        return output
    }

    /// Runs a raw benchmark tool to its end: its exit status and standard output (its standard
    /// error goes to this process's).
    static func output(of executable: String, _ arguments: [String], environment: [String: String]? = nil) throws
        -> (status: Int32, output: String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
