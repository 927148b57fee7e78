//! Polling many calls at once without spawning them.

/// Polls `futures` concurrently on the current task (bound them with a
/// semaphore inside) and returns their outputs in order.
pub async fn join_all<F: std::future::Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for future in futures {
        set.push(Box::pin(future));
    }
    let mut outputs: Vec<Option<F::Output>> = (0..set.len()).map(|_| None).collect();
    std::future::poll_fn(|context| {
        let mut all_done = true;
        for (index, future) in set.iter_mut().enumerate() {
            if outputs[index].is_some() {
                continue;
            }
            match future.as_mut().poll(context) {
                std::task::Poll::Ready(output) => outputs[index] = Some(output),
                std::task::Poll::Pending => all_done = false,
            }
        }
        if all_done {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}
