//! English and Spanish conversations: the owner's manager, the remote platform team group and a
//! friend in Buenos Aires.

use super::pictures::Pic;
use super::script::L::{At, Del, Doc, Img, Poll, R, Re, T, Voice};
use super::script::{Chat, With, ep};

/// The English- and Spanish-speaking chats.
pub(crate) const CHATS: &[Chat] = &[SARAH, TEAM, CARMEN];

#[rustfmt::skip]
const SARAH: Chat = Chat {
    with: With::Person("sarah"),
    episodes: &[
        ep(13, 15, 5, &[
            T("sarah", "Hi Yael! Quick one: can you take the on-call rotation next week? Tom is out."),
            T("me", "Sure, no problem. Same hours as usual?"),
            T("sarah", "Yes, 9 to 6 your time. Thanks a ton!"),
        ]),
        ep(12, 16, 30, &[
            T("sarah", "How's the migration going?"),
            T("me", "Good progress. Staging is on the new cluster, prod cutover needs one more dry run."),
            T("sarah", "Great. Any blockers?"),
            T("me", "DNS TTLs. I'd like to lower them a day before the cutover."),
            T("sarah", "Makes sense, go ahead."),
        ]),
        ep(11, 14, 0, &[
            T("sarah", "Could you present the migration plan at the all-hands?"),
            T("me", "Happy to. Is 10 minutes enough?"),
            T("sarah", "Perfect. Keep it high level, most people there aren't engineers"),
            T("me", "Got it, fewer acronyms 😄"),
        ]),
        ep(10, 15, 20, &[
            T("sarah", "Do you need anything from me for the DNS change?"),
            T("me", "Just an approval on the change request, sending it now"),
            T("sarah", "Approved ✅"),
        ]),
        ep(9, 13, 45, &[
            Doc("me", "migration_plan_v3.pdf", "Draft slides for the all-hands, feedback welcome"),
            T("sarah", "Looks great. Slide 4 is a bit dense, maybe split it in two?"),
            T("me", "Good call, will do"),
        ]),
        ep(8, 17, 10, &[
            T("sarah", "The presentation went really well. People loved the diagram 🙌"),
            T("me", "Thanks! I was a bit nervous"),
            T("sarah", "It didn't show at all"),
        ]),
        ep(7, 9, 10, &[
            T("sarah", "Quick sanity check: is the dry run still planned for the day after tomorrow?"),
            T("me", "Yes, nothing changed"),
        ]),
        ep(6, 12, 0, &[
            T("sarah", "Heads up: finance asked about the cloud bill spike last month"),
            T("me", "That's the duplicate clusters during the migration. It should drop by about 40% after the cutover"),
            T("sarah", "Can you put that in a short note for them?"),
            T("me", "Sure, by end of day"),
            T("me", "Sent it to you by email"),
            Re("sarah", 1, "🙏"),
        ]),
        ep(5, 10, 30, &[
            T("sarah", "Also, performance reviews open next week. Don't forget your self-assessment"),
            T("me", "Ugh, thanks for the reminder"),
        ]),
        ep(4, 13, 30, &[
            T("sarah", "How are you holding up? It's been an intense couple of weeks"),
            T("me", "Tired but good. Taking a long weekend after the cutover"),
            T("sarah", "You've earned it. Block it in the calendar"),
        ]),
        ep(3, 15, 50, &[
            T("sarah", "Cutover tonight still on?"),
            T("me", "Yes, 22:00 my time. The rollback plan is ready."),
            T("sarah", "I'll stay online in case you need an approval"),
        ]),
        ep(2, 1, 10, &[
            T("me", "Cutover done ✅ All services green, error rate flat."),
            T("sarah", "Amazing work!! Now go sleep 😄"),
            T("me", "Going 😴"),
        ]),
        ep(1, 14, 20, &[
            T("sarah", "Leadership sent a thank-you note about the migration. Forwarding it to you."),
            T("me", "That's really nice, thanks for passing it on"),
            T("sarah", "Let's talk tomorrow about what's next. Maybe the observability project?"),
            T("me", "Sounds great"),
        ]),
        ep(0, 11, 0, &[
            T("sarah", "Got 15 min at 2pm your time?"),
            R("me", 1, "Yes, sending an invite"),
        ]),
    ],
};

#[rustfmt::skip]
const TEAM: Chat = Chat {
    with: With::Group(
        "120363112845507721",
        "Platform Team",
        &["sarah", "dev", "tom", "aisha"],
    ),
    episodes: &[
        ep(13, 12, 0, &[
            T("tom", "Morning all, I'm OOO from tomorrow for a week. Handover doc is in the drive."),
            T("dev", "Enjoy! Where are you going?"),
            T("tom", "Hiking in the Dolomites 🏔️"),
            T("aisha", "Jealous. Bring back photos"),
        ]),
        ep(12, 17, 20, &[
            T("dev", "Anyone else seeing flaky tests in the auth service?"),
            T("aisha", "Yes, the token expiry test. It depends on the wall clock 🙃"),
            T("dev", "Classic. I'll inject a clock."),
            T("me", "+1, there's one in billing with the same problem"),
            T("dev", "I'll fix both"),
        ]),
        ep(12, 18, 30, &[
            T("tom", "Day 1 in the mountains, my legs already hate me"),
            T("aisha", "Stay hydrated!"),
        ]),
        ep(11, 11, 40, &[
            At("sarah", "@me can you share the cutover timeline here for visibility?"),
            T("me", "Dry run in 5 days, prod cutover in 8 days at 22:00 BRT. Rollback window 2h."),
            T("sarah", "Thanks!"),
            T("aisha", "Do we need a change freeze?"),
            T("me", "Only for the infra repos, from the afternoon of the cutover"),
        ]),
        ep(10, 16, 15, &[
            Img("dev", Pic::Whiteboard, "Whiteboard from today's design session"),
            T("aisha", "Who drew the database as a cloud 😂"),
            T("dev", "Sarah did"),
            T("sarah", "It IS a cloud database"),
            Re("aisha", 1, "😂"),
        ]),
        ep(9, 18, 0, &[
            Poll("aisha", "Team lunch next week — which day works?\nTuesday\nWednesday\nThursday"),
            T("dev", "Voted. Anything but sushi again please"),
            T("me", "I'll join remotely with my own lunch 🥪"),
        ]),
        ep(8, 15, 0, &[
            Img("tom", Pic::Mountains, "Greetings from the mountains"),
            T("dev", "Show-off"),
            T("me", "Wow, that view!"),
            Re("aisha", 3, "😍"),
        ]),
        ep(7, 12, 30, &[
            T("dev", "Deploys are blocked, the CI runners are out of disk"),
            T("aisha", "On it"),
            T("aisha", "Cleared old docker images, runners are back"),
            T("dev", "You're a hero"),
            T("me", "Should we add a cron for that?"),
            R("aisha", 1, "Yes, I'll add a weekly prune job"),
        ]),
        ep(6, 10, 45, &[
            T("aisha", "Reminder: the security training is due by the end of the month"),
            T("dev", "Is it the same one as last year?"),
            T("aisha", "New videos, same quiz 😅"),
            T("tom", "Greetings from a hut with no wifi, see you all next week"),
        ]),
        ep(5, 14, 10, &[
            T("me", "Dry run done. Found one issue: the queue consumers reconnect too slowly after failover"),
            T("dev", "How slow?"),
            T("me", "About 90 seconds. The backoff cap is too high"),
            T("dev", "I can lower it to 10s and add jitter"),
            T("me", "Perfect, thanks"),
        ]),
        ep(5, 17, 5, &[
            T("aisha", "Can someone pick up the kids at 5? I'm stuck in a meeting"),
            Del("aisha", 1),
            T("aisha", "Sorry, wrong group 🙈"),
            T("dev", "Happy to help, but I don't know where your kids are 😄"),
        ]),
        ep(4, 15, 30, &[
            T("dev", "Backoff change is merged and deployed to staging"),
            T("me", "Ran the failover test again: 7 seconds to reconnect"),
            T("sarah", "Great work, both of you"),
            Re("dev", 1, "🙏"),
        ]),
        ep(3, 21, 50, &[
            T("sarah", "Cutover starts in 10 minutes. Good luck everyone"),
            T("me", "Starting. Will post updates here"),
            T("me", "DNS switched, traffic is moving"),
            T("dev", "Consumers reconnected in 8 seconds 🎉"),
            T("me", "All green. Monitoring for another hour"),
            Re("sarah", 1, "🙌"),
        ]),
        ep(2, 9, 0, &[
            T("aisha", "Good morning! Error rates stayed flat overnight"),
            T("tom", "Back from vacation and the migration is done? Best week to be away 😄"),
            T("dev", "Perfect timing as always"),
            At("tom", "@me thanks for covering on-call! Anything I should know?"),
            R("me", 1, "Nothing big. One disk alert, handled. Notes are in the doc"),
        ]),
        ep(1, 16, 40, &[
            T("sarah", "Retro for the migration tomorrow at 10am PT"),
            Re("dev", 1, "👍"),
            T("aisha", "I'll bring the graphs"),
        ]),
        ep(0, 10, 15, &[
            T("dev", "PR for the observability spike is up, reviews welcome"),
            T("me", "Looking now"),
            R("me", 2, "Left a few comments, mostly naming. LGTM otherwise"),
            T("dev", "Thanks, fixing"),
        ]),
    ],
};

#[rustfmt::skip]
const CARMEN: Chat = Chat {
    with: With::Person("carmen"),
    episodes: &[
        ep(13, 21, 30, &[
            T("carmen", "¡Hola Yael! ¿Cómo va todo en São Paulo?"),
            T("me", "¡Hola Carmen! Todo bien, mucho trabajo pero contenta. ¿Y tú en Buenos Aires?"),
            T("carmen", "Bien, con mil cosas. Empecé un curso de cerámica"),
            T("me", "¡Qué lindo! Mándame fotos de lo que hagas"),
        ]),
        ep(12, 19, 30, &[
            T("carmen", "¿Viste la serie que te recomendé?"),
            T("me", "Voy por el tercer capítulo, ¡me tiene atrapada!"),
            T("carmen", "Espera a ver el final de la temporada"),
        ]),
        ep(11, 16, 0, &[
            Img("carmen", Pic::Bowl, "Mi primer cuenco. Está un poco torcido 😅"),
            T("me", "¡Está precioso! Lo torcido le da personalidad"),
            T("carmen", "Eso dice mi profesora también jaja"),
        ]),
        ep(9, 22, 40, &[
            T("carmen", "Oye, ¿sigue en pie lo de viajar juntas a Florianópolis?"),
            T("me", "¡Sí! Estaba pensando en el mes que viene, un fin de semana largo"),
            T("carmen", "Perfecto. Yo vuelo desde Buenos Aires y nos encontramos allá"),
            T("me", "Busco alojamiento cerca de la playa"),
        ]),
        ep(7, 13, 15, &[
            T("me", "Encontré una casita en Campeche, a dos cuadras del mar"),
            Img("me", Pic::SeaView, "La vista desde el balcón"),
            T("carmen", "¡Me encanta! Resérvala ya antes de que vuele"),
            T("me", "Reservada ✅"),
            Re("carmen", 1, "🥳"),
        ]),
        ep(6, 10, 0, &[
            T("carmen", "Mi hermana dice que en Floripa hay que probar las ostras"),
            T("me", "¿Ostras? No sé si me animo"),
            T("carmen", "Vamos, que se vive una sola vez"),
            T("me", "Está bien, pero tú pruebas primero"),
        ]),
        ep(5, 19, 50, &[
            T("carmen", "¿Tú sabes surfear?"),
            T("me", "Nada de nada jaja"),
            T("carmen", "Yo tampoco. ¿Tomamos una clase?"),
            T("me", "Dale, aunque seguro termino tragando medio océano"),
        ]),
        ep(3, 8, 40, &[
            Voice("carmen", 41),
            T("me", "Jajaja no puedo con tus audios de la mañana"),
            T("carmen", "Es que antes del café no funciono"),
        ]),
        ep(1, 21, 0, &[
            T("carmen", "Compré el vuelo. Llego a las 11 de la mañana"),
            T("me", "Te busco en el aeropuerto, yo llego un día antes"),
            T("carmen", "Eres la mejor 💛"),
        ]),
        ep(0, 19, 20, &[
            T("carmen", "Ya preparé la maleta y faltan tres semanas 🙈"),
            T("me", "Jajaja eres peor que yo"),
        ]),
    ],
};
