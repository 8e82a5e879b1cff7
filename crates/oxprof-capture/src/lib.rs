//! Capture profiles from live TensorFlow and JAX programs over the ProfilerService gRPC protocol.
