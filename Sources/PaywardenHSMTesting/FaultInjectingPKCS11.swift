import Foundation
import Logging
import PKCS11

/// A PKCS#11 module that forwards every call to SoftHSM and, on command, fails, hangs or slows
/// down per function, or behaves as a removed device; it counts every call. It is the project's
/// own test-only module (`CModules/CFaultInjectingPKCS11`), which `swift build --build-tests`
/// builds as `libPaywardenFaultInjectingPKCS11.so` beside the test bundle.
///
/// Each instance is a device of its own: a copy of the library at its own path (a separate object
/// to the dynamic loader, so separate faults and counts) that forwards to its own copy of SoftHSM.
/// Its `C_Initialize`, `C_Finalize` and removals therefore touch only the HSMs opened through it,
/// never those opened on SoftHSM directly, while it reads the same `SOFTHSM2_CONF` and so sees
/// the tokens ``SoftHSMTestToken`` makes. Faults are cleared and hangs released when the test ends
/// (``TestResources``), before its HSMs are closed.
///
/// ```swift
/// let token = try await TestToken.make()
/// let device = try FaultInjectingPKCS11.make()
/// let hsm = try await device.open(token)       // or HSMConfiguration.modulePath = device.modulePath
/// try device.fail("C_Decrypt", with: .generalError, times: 1)
/// try device.hang("C_DeriveKey")               // until device.release()
/// device.removeDevice()                        // every call: CKR_DEVICE_REMOVED
/// #expect(try device.calls("C_Login") == 1)
/// ```
///
/// Function names are PKCS#11's (`"C_Sign"`); `"*"` names every function, after its own setting.
/// An injected error is returned without calling SoftHSM, but an operation the failed call would
/// have ended (`C_Decrypt`, `C_SignFinal`, `C_DigestKey`, ...) is ended in SoftHSM as the standard
/// says, so the session is not left busy. The C header lists the same controls and the
/// `PWFAULT_FAULTS` specification for a module loaded by a child process.
public final class FaultInjectingPKCS11: @unchecked Sendable {
    /// The module to configure: ``HSMConfiguration/modulePath``.
    public let modulePath: String
    // The C side is thread-safe; these pointers never change once loaded.
    private let controls: Controls

    /// Why the module cannot be used as asked.
    public enum ControlError: Error, CustomStringConvertible {
        case notBuilt(String)
        case cannotLoad(String)
        case unknownFunction(String)
        case invalidSpecification(entry: Int)
        case notHung(function: String, calls: Int)
        case tooManyRefusals

        public var description: String {
            switch self {
            case .notBuilt(let path):
                "no fault-injecting PKCS#11 module at \(path): build it with `swift build --build-tests` "
                    + "(or name it in PWFAULT_MODULE)"
            case .cannotLoad(let reason): "cannot load the fault-injecting PKCS#11 module: \(reason)"
            case .unknownFunction(let name): "\"\(name)\" is not a PKCS#11 function name (C_Login, C_Sign, ... or *)"
            case .invalidSpecification(let entry): "fault specification entry \(entry) is not understood"
            case .notHung(let function, let calls): "\(function) did not have \(calls) call(s) hanging in time"
            case .tooManyRefusals: "at most 16 mechanisms can be refused"
            }
        }
    }

    /// The library as built: `PWFAULT_MODULE`, else beside the test bundle.
    public static let builtLibrary: String = {
        let name = "libPaywardenFaultInjectingPKCS11.so"
        if let path = ProcessInfo.processInfo.environment["PWFAULT_MODULE"], !path.isEmpty { return path }
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for directory in [bundle, bundle.deletingLastPathComponent()] {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
        }
        return bundle.appendingPathComponent(name).path
    }()

    /// The environment for a child process (`paywarden serve` with this library as its module,
    /// ``builtLibrary``) that takes its faults from `faults` at load and from `controlFile` whenever
    /// it changes (write a new file and rename it over), both in the ``apply(_:)`` syntax.
    public static func environment(faults: String? = nil, controlFile: String? = nil, target: String = SoftHSMTestToken.modulePath)
        -> [String: String]
    {
        var environment = ["PWFAULT_TARGET": target]
        if let faults { environment["PWFAULT_FAULTS"] = faults }
        if let controlFile { environment["PWFAULT_CONTROL"] = controlFile }
        return environment
    }

    /// A new device that forwards to `target` (a private copy of it, loaded when the first HSM
    /// opens), with no faults. It is released when the test ends.
    /// - Parameter privateCopy: false loads `target` itself rather than a copy, for modules that
    ///   find their own files beside them (NSS softokn loads its freebl from its directory).
    public static func make(target: String = SoftHSMTestToken.modulePath, privateCopy: Bool = true) throws -> FaultInjectingPKCS11 {
        let source = builtLibrary
        guard FileManager.default.fileExists(atPath: source) else { throw ControlError.notBuilt(source) }
        let directory = NSTemporaryDirectory() + "paywarden-fault-pkcs11-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestResources.track(directory: directory)  // once loaded, the mapping outlives the file
        let path = directory + "/libfaultinjecting.so"
        try FileManager.default.copyItem(atPath: source, toPath: path)
        let device = FaultInjectingPKCS11(modulePath: path, controls: try Controls(path: path))
        guard device.controls.setTarget(target, privateCopy ? 1 : 0) == 0 else {
            throw ControlError.cannotLoad("\(path) was already loaded")
        }
        // Cleanups run before the test's HSMs close: a hung call must return before its HSM can.
        TestResources.track(cleanup: { device.clear() })
        return device
    }

    private init(modulePath: String, controls: Controls) {
        self.modulePath = modulePath
        self.controls = controls
    }

    // MARK: Opening through the device

    /// `token`'s configuration with this module in place of SoftHSM.
    public func configuration(for token: TestToken) -> HSMConfiguration {
        var configuration = token.configuration
        configuration.modulePath = modulePath
        return configuration
    }

    /// Opens `token` through this device (closed when the test ends), as ``TestToken/open(_:)`` does.
    public func open(_ token: TestToken, _ adjust: @Sendable (inout HSMConfiguration) -> Void = { _ in }) async throws -> HSM {
        try await TestToken.open(configuration(for: token), adjust)
    }

    // MARK: Faults

    /// The next `times` calls of `function` (every call until cleared when nil) return `value`
    /// without reaching SoftHSM.
    public func fail(_ function: String, with value: ReturnValue, times: Int? = nil) throws {
        try check(function, controls.setError(function, value.rawValue, Int32(clamping: times ?? -1)))
    }

    /// Ends ``fail(_:with:times:)`` for `function`.
    public func stopFailing(_ function: String) throws {
        try check(function, controls.setError(function, ReturnValue.ok.rawValue, 0))
    }

    /// The next `times` calls of `function` (every call when nil) block until ``release(_:)``,
    /// or each for at most `atMost`, then go on as usual (faults included).
    public func hang(_ function: String, times: Int? = nil, atMost: Duration? = nil) throws {
        // 0 means "until released" to the module: a bound rounds up to at least a millisecond.
        let milliseconds = atMost.map { bound -> UInt in
            let (seconds, attoseconds) = bound.components
            return UInt(max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        }
        try check(function, controls.hang(function, Int32(clamping: times ?? -1), milliseconds ?? 0))
    }

    /// Ends the hang of `function` (of every function by default) and lets its blocked calls go on.
    public func release(_ function: String = "*") throws {
        try check(function, controls.release(function))
    }

    /// How many calls of `function` (of every function by default) are blocked in a hang now.
    public func hungCalls(_ function: String = "*") throws -> Int {
        let count = controls.hung(function)
        try check(function, count < 0 ? -1 : 0)
        return count
    }

    /// Waits until `calls` calls of `function` are blocked in a hang.
    public func waitUntilHung(_ function: String, calls: Int = 1, timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while try hungCalls(function) < calls {
            guard ContinuousClock.now < deadline else { throw ControlError.notHung(function: function, calls: calls) }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// Sleeps `microseconds` before every call of `function` (0 removes the latency).
    public func addLatency(_ function: String, microseconds: Int) throws {
        try check(function, controls.setLatency(function, UInt(max(0, microseconds))))
    }

    /// Every function but `C_Initialize`, `C_Finalize` and `C_GetInfo` returns `CKR_DEVICE_REMOVED`
    /// until ``restoreDevice()``. When `endingSessions`, it waits for the calls inside SoftHSM to
    /// return (milliseconds), then closes every session opened through the device, which logs the
    /// token out: the old session handles are invalid after the restore, as after a power cycle.
    public func removeDevice(endingSessions: Bool = true) {
        controls.removeDevice(endingSessions ? 1 : 0)
    }

    public func restoreDevice() {
        controls.restoreDevice()
    }

    /// ECDH derives asking for the key derivation function `from` (a `CKD_` value) reach the target
    /// asking for `to`: the token then computes another KDF than the one named, as a module with its
    /// own reading of a KDF would. ``clear()`` ends it.
    public func rewriteECDHKDF(from: UInt, to: UInt) {
        controls.rewriteECDHKDF(from, to)
    }

    /// Every call that takes `mechanism` (`C_SignInit`, `C_DeriveKey`, `C_GenerateKeyPair`, ...)
    /// answers `CKR_MECHANISM_INVALID`, as on a module without it. ``clear()`` ends it.
    public func refuse(_ mechanism: MechanismType) throws {
        guard controls.refuseMechanism(mechanism.rawValue) == 0 else { throw ControlError.tooManyRefusals }
    }

    /// Restores the device, releases every hang, and clears every error, latency, KDF rewrite and
    /// mechanism refusal. Counts stay.
    public func clear() {
        controls.clear()
    }

    /// Applies a specification in the `PWFAULT_FAULTS` syntax, e.g.
    /// `"C_Login=error:CKR_PIN_INCORRECT:3; C_Sign=latency:2000; device=removed"`.
    public func apply(_ specification: String) throws {
        let bad = controls.apply(specification)
        guard bad == 0 else { throw ControlError.invalidSpecification(entry: Int(bad)) }
    }

    // MARK: Counts

    /// Calls of `function` (of every function for `"*"`) since the device was made or the counts
    /// reset, faulted ones included.
    public func calls(_ function: String) throws -> Int {
        let count = controls.calls(function)
        try check(function, count < 0 ? -1 : 0)
        return count
    }

    public func resetCalls() {
        controls.resetCalls()
    }

    /// Sessions opened through the device and not closed (a removal closes them all).
    public var openSessions: Int { controls.openSessions() }

    private func check(_ function: String, _ status: Int32) throws {
        guard status == 0 else { throw ControlError.unknownFunction(function) }
    }
}

extension FaultInjectingPKCS11 {
    /// The control functions of one loaded copy of the library.
    fileprivate struct Controls {
        typealias Name = UnsafePointer<CChar>?

        let setTarget: @convention(c) (Name, Int32) -> Int32
        let setError: @convention(c) (Name, UInt, Int32) -> Int32
        let hang: @convention(c) (Name, Int32, UInt) -> Int32
        let release: @convention(c) (Name) -> Int32
        let hung: @convention(c) (Name) -> Int
        let setLatency: @convention(c) (Name, UInt) -> Int32
        let removeDevice: @convention(c) (Int32) -> Void
        let restoreDevice: @convention(c) () -> Void
        let clear: @convention(c) () -> Void
        let rewriteECDHKDF: @convention(c) (UInt, UInt) -> Void
        let refuseMechanism: @convention(c) (UInt) -> Int32
        let calls: @convention(c) (Name) -> Int
        let resetCalls: @convention(c) () -> Void
        let openSessions: @convention(c) () -> Int
        let apply: @convention(c) (Name) -> Int32

        /// Opens the library at `path`; the HSM layer's later dlopen of the same path gets the
        /// same handle, so these functions act on the instance it uses. It is never closed.
        init(path: String) throws {
            guard let library = dlopen(path, RTLD_NOW | RTLD_LOCAL) else {
                throw ControlError.cannotLoad(dlerror().map { String(cString: $0) } ?? path)
            }
            func symbol<Function>(_ name: String) throws -> Function {
                guard let address = dlsym(library, name) else { throw ControlError.cannotLoad("\(path) has no \(name)") }
                return unsafeBitCast(address, to: Function.self)
            }
            setTarget = try symbol("pwfault_set_target")
            setError = try symbol("pwfault_set_error")
            hang = try symbol("pwfault_hang")
            release = try symbol("pwfault_release")
            hung = try symbol("pwfault_hung")
            setLatency = try symbol("pwfault_set_latency")
            removeDevice = try symbol("pwfault_remove_device")
            restoreDevice = try symbol("pwfault_restore_device")
            clear = try symbol("pwfault_clear")
            rewriteECDHKDF = try symbol("pwfault_rewrite_ecdh_kdf")
            refuseMechanism = try symbol("pwfault_refuse_mechanism")
            calls = try symbol("pwfault_calls")
            resetCalls = try symbol("pwfault_reset_calls")
            openSessions = try symbol("pwfault_open_sessions")
            apply = try symbol("pwfault_apply")
        }
    }
}
