import Foundation

/// A fixed set of worker threads, each owning one PKCS#11 session, fed from a bounded queue.
///
/// Sessions are never shared between threads. PKCS#11 calls block, so they run here and not on
/// the cooperative pool. When the queue is full, work is refused at once with an `overloaded`
/// error rather than queued without bound. ``exclusive(_:)`` drains the workers and runs
/// maintenance (module recycling, re-login) while new work waits in the queue.
final class SessionPool: @unchecked Sendable {
    /// Work for a worker; returns the error it met, so the worker can drop a broken session.
    typealias Job = (Result<Session, PKCS11Error>) -> PKCS11Error?

    private let condition = NSCondition()
    private var queue: [Job] = []
    private var queueHead = 0
    private var running = 0
    private var paused = false
    private var stopped = false
    private var generation = 0
    private var liveWorkers = 0

    let workerCount: Int
    let maxPending: Int
    private let openSession: @Sendable () throws(PKCS11Error) -> Session

    /// - Parameter openSession: opens a session for the calling worker thread.
    init(workers: Int, maxPending: Int, openSession: @escaping @Sendable () throws(PKCS11Error) -> Session) {
        self.workerCount = max(1, workers)
        self.maxPending = max(1, maxPending)
        self.openSession = openSession
        for index in 0..<workerCount {
            let thread = Thread { [self] in workerLoop() }
            thread.name = "paywarden-hsm-\(index)"
            thread.start()
        }
        liveWorkers = workerCount
    }

    /// Jobs queued and not yet started.
    var pending: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count - queueHead
    }

    /// Runs `body` with a worker's session on that worker's thread.
    func run<R: Sendable>(_ body: @escaping @Sendable (Session) throws(PKCS11Error) -> R) async throws(PKCS11Error) -> R {
        do {
            return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<R, any Error>) in
                let job: Job = { session in
                    do throws(PKCS11Error) {
                        continuation.resume(returning: try body(session.get()))
                        return nil
                    } catch {
                        continuation.resume(throwing: error)
                        return error
                    }
                }
                if let refusal = enqueue(job) { continuation.resume(throwing: refusal) }
            }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .poolStopped, category: .retry, message: "unexpected error \(error)")
        }
    }

    /// Waits until no worker is running a job, runs `body` on a dedicated thread while workers
    /// stay parked, then lets them go on with fresh sessions (the old handles may be invalid).
    func exclusive<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await DedicatedThread.run(name: "paywarden-hsm-maintenance") { [self] in
            condition.lock()
            while paused { condition.wait() }
            paused = true
            while running > 0 { condition.wait() }
            condition.unlock()
            defer {
                condition.lock()
                generation += 1
                paused = false
                condition.broadcast()
                condition.unlock()
            }
            return try body()
        }
    }

    /// Stops the workers after the queue drains. Sessions are closed by their threads.
    func shutdown() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while liveWorkers > 0 { condition.wait() }
        condition.unlock()
    }

    private func enqueue(_ job: @escaping Job) -> PKCS11Error? {
        condition.lock()
        defer { condition.unlock() }
        if stopped {
            return PKCS11Error(code: .poolStopped, category: .retry, message: "the HSM session pool is shut down")
        }
        if queue.count - queueHead >= maxPending {
            return PKCS11Error(code: .overloaded, category: .retry,
                               message: "\(maxPending) HSM operations are already waiting; retry shortly")
        }
        queue.append(job)
        condition.signal()
        return nil
    }

    private func workerLoop() {
        var session: Session?
        var sessionGeneration = -1
        while true {
            condition.lock()
            while !stopped && (paused || queueHead == queue.count) { condition.wait() }
            if stopped && queueHead == queue.count {
                liveWorkers -= 1
                condition.broadcast()
                condition.unlock()
                break
            }
            let job = queue[queueHead]
            queueHead += 1
            if queueHead > 1024 && queueHead * 2 > queue.count {
                queue.removeFirst(queueHead)
                queueHead = 0
            }
            running += 1
            let currentGeneration = generation
            condition.unlock()

            if sessionGeneration != currentGeneration {
                // After maintenance the old handle may name nothing, or someone else's session.
                session?.abandon()
                session = nil
            }
            if session == nil {
                do {
                    session = try openSession()
                    sessionGeneration = currentGeneration
                } catch {
                    _ = job(.failure(error))
                }
            }
            if let session, let error = job(.success(session)), error.category == .relogin {
                session.abandon()
                sessionGeneration = -1
            }

            condition.lock()
            running -= 1
            if running == 0 && paused { condition.broadcast() }
            condition.unlock()
        }
        session?.close()
    }
}
