-- Each sim transmission carries its own id, so a log batch whose COMMIT answer was lost can be
-- written again without doubling rows (a real second transmission has another id).
alter table sim_transmissions add column transmission text;
create unique index sim_transmissions_transmission on sim_transmissions (transmission);
