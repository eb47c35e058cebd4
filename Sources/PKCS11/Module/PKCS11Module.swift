import CPKCS11
import Foundation
import Synchronization

/// A loaded PKCS#11 module (a shared object and its function list).
///
/// A module's state is process-wide: `C_Initialize` and `C_Finalize` affect every user of the
/// library in the process, so there is one `PKCS11Module` per path, shared.
public final class PKCS11Module: @unchecked Sendable {
    public let path: String
    let functions: UnsafeMutablePointer<CK_FUNCTION_LIST>
    /// Held alone by creations of token objects, shared by every other call (``TokenObjectLock``).
    let tokenObjectLock = TokenObjectLock()

    private static let loaded = Mutex<[String: PKCS11Module]>([:])
    /// How many users (open HSMs, token initialisers) hold the module initialised, and the
    /// `pReserved` string the module was initialised with (one per initialisation: NSS softokn
    /// opens the database it names for the process).
    private let initialization = Mutex<(users: Int, reserved: String?)>((0, nil))

    private init(path: String, functions: UnsafeMutablePointer<CK_FUNCTION_LIST>) {
        self.path = path
        self.functions = functions
    }

    /// Loads the module at `path` once per process; later calls return the same instance.
    public static func load(path: String) throws(PKCS11Error) -> PKCS11Module {
        let result: Result<PKCS11Module, PKCS11Error> = loaded.withLock { modules in
            if let module = modules[path] { return .success(module) }
            guard FileManager.default.fileExists(atPath: path) else {
                return .failure(
                    PKCS11Error(
                        code: .moduleNotFound, category: .misconfiguration,
                        message: "no PKCS#11 module at \(path)"
                    ))
            }
            var raw = cpkcs11_module()
            var reason = [CChar](repeating: 0, count: 512)
            let status = cpkcs11_load(path, &raw, &reason, reason.count)
            guard status == 0, let functions = raw.functions else {
                let text = reason.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                return .failure(
                    PKCS11Error(
                        code: .moduleInvalid, category: .misconfiguration,
                        message: "\(path) is not a loadable PKCS#11 module (\(text))"
                    ))
            }
            let module = PKCS11Module(path: path, functions: functions)
            modules[path] = module
            return .success(module)
        }
        return try result.get()
    }

    /// `C_Initialize` with OS locking and `reserved` as `pReserved`, for the first user; later
    /// users share it, and must ask for the same `reserved`: a module is initialised once.
    func initialize(reserved: String?) throws(PKCS11Error) {
        try initialization.withLock { (state) throws(PKCS11Error) in
            if state.users == 0 {
                let rv = cpkcs11_initialize(functions, reserved)
                if rv != CK_RV(CKR_CRYPTOKI_ALREADY_INITIALIZED) { try check("C_Initialize", rv) }
                state.reserved = reserved
            } else if state.reserved != reserved {
                throw PKCS11Error(
                    code: .moduleInvalid, category: .misconfiguration,
                    message: "\(path) is already initialised in this process with other C_Initialize arguments (pReserved); "
                        + "one process opens one configuration of a module")
            }
            state.users += 1
        }
    }

    /// Releases one user; the last one calls `C_Finalize`, which closes every session and
    /// forgets every handle in the process.
    func finalize() {
        initialization.withLock { state in
            state.users -= 1
            if state.users == 0 { _ = functions.pointee.C_Finalize(nil) }
        }
    }

    /// `C_Finalize` then `C_Initialize` (with the same arguments), which returns every resource
    /// the module holds, when the caller is the module's only user. Returns false, doing
    /// nothing, when others share it.
    func reinitialize() throws(PKCS11Error) -> Bool {
        try initialization.withLock { (state) throws(PKCS11Error) -> Bool in
            guard state.users == 1 else { return false }
            _ = functions.pointee.C_Finalize(nil)
            try check("C_Initialize", cpkcs11_initialize(functions, state.reserved))
            return true
        }
    }

    public func info() throws(PKCS11Error) -> ModuleInfo {
        var info = CK_INFO()
        try check("C_GetInfo", functions.pointee.C_GetInfo(&info))
        return ModuleInfo(info)
    }

    func slots(tokenPresent: Bool) throws(PKCS11Error) -> [SlotID] {
        var count: CK_ULONG = 0
        let present = CK_BBOOL(tokenPresent ? CK_TRUE : CK_FALSE)
        try check("C_GetSlotList", functions.pointee.C_GetSlotList(present, nil, &count))
        var slots = [CK_SLOT_ID](repeating: 0, count: Int(count))
        try check("C_GetSlotList", functions.pointee.C_GetSlotList(present, &slots, &count))
        return slots.prefix(Int(count)).map(SlotID.init)
    }

    func tokenInfo(slot: SlotID) throws(PKCS11Error) -> TokenInfo {
        var info = CK_TOKEN_INFO()
        try check("C_GetTokenInfo", functions.pointee.C_GetTokenInfo(slot.rawValue, &info))
        return TokenInfo(slot: slot, info)
    }

    /// All initialised tokens, in slot order.
    public func tokens() throws(PKCS11Error) -> [TokenInfo] {
        try presentTokens().filter(\.isInitialized)
    }

    /// Every token present, initialised or not, in slot order.
    func presentTokens() throws(PKCS11Error) -> [TokenInfo] {
        var tokens: [TokenInfo] = []
        for slot in try slots(tokenPresent: true) { tokens.append(try tokenInfo(slot: slot)) }
        return tokens
    }

    /// The slot whose token carries `label`. Slot ids move when tokens are added, so a token is
    /// always found by its label.
    func slot(forTokenLabel label: String) throws(PKCS11Error) -> SlotID {
        let tokens = try tokens()
        if let token = tokens.first(where: { $0.label == label }) { return token.slot }
        let known = tokens.map { "\"\($0.label)\"" }.joined(separator: ", ")
        throw PKCS11Error(
            code: .tokenNotFound, category: .misconfiguration,
            message: "no token labelled \"\(label)\" in \(path) (tokens present: \(known.isEmpty ? "none" : known))"
        )
    }

    /// The mechanisms the token in `slot` lists.
    func mechanisms(slot: SlotID) throws(PKCS11Error) -> Set<MechanismType> {
        var count: CK_ULONG = 0
        try check("C_GetMechanismList", functions.pointee.C_GetMechanismList(slot.rawValue, nil, &count))
        var list = [CK_MECHANISM_TYPE](repeating: 0, count: Int(count))
        try check("C_GetMechanismList", functions.pointee.C_GetMechanismList(slot.rawValue, &list, &count))
        return Set(list.prefix(Int(count)).map(MechanismType.init(rawValue:)))
    }
}
