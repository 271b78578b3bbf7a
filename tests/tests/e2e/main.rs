//! End-to-end: worker + gateway against real Postgres and NATS, driven through `/mcp`.

mod accounts;
mod auth;
mod cluster;
mod compat;
mod direct_route;
mod edge;
mod faults;
mod media_storm;
mod network;
pub(crate) mod ops;
mod owner;
mod reading;
mod scope;
mod search;
mod send;
mod send_gateway;
mod tools;
mod wait;
mod wait_direct;
mod whatsapp;
