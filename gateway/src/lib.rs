//! The wazap gateway (stateless; run several).
