//! The real `whatsapp` connector end to end against wanet, the WhatsApp test network: a server on
//! a loopback websocket and simulated phones that are real whatsapp-rust clients.

mod linking;
mod phones;
