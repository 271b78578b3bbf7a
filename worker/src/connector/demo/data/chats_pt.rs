//! Portuguese conversations (São Paulo): a running friend who is partly addressed by LID, the
//! landlord, a language-exchange friend and the weekly football group.

use super::pictures::Pic;
use super::script::L::{At, Doc, Img, Loc, Poll, R, Re, T, Voice};
use super::script::{Chat, With, ep, ep_lid};

/// The Portuguese-speaking chats.
pub(crate) const CHATS: &[Chat] = &[LUCAS, ROBERTO, MARIANA, PELADA];

#[rustfmt::skip]
const LUCAS: Chat = Chat {
    with: With::Person("lucas"),
    episodes: &[
        ep(13, 18, 40, &[
            T("lucas", "E aí, bora correr no Ibirapuera amanhã cedo?"),
            T("me", "Bora! 6h30 no portão 3?"),
            T("lucas", "Fechado. Se chover a gente remarca"),
            T("me", "Combinado 👍"),
        ]),
        ep(12, 6, 25, &[
            Loc("lucas", "Parque Ibirapuera — Portão 3"),
            T("lucas", "Cheguei, tô do lado do bebedouro"),
            T("me", "2 minutinhos, tô prendendo a bike"),
        ]),
        ep(11, 12, 30, &[
            T("lucas", "Cara, minhas pernas estão mortas hoje 😂"),
            T("me", "As minhas também. 8 km foi muito pra primeira vez"),
            T("lucas", "Semana que vem a gente faz 10"),
            T("me", "Calma lá, atleta"),
        ]),
        ep_lid(9, 20, 10, &[
            T("lucas", "Viu que abriu um restaurante árabe novo na Augusta?"),
            T("me", "Não vi! É bom?"),
            T("lucas", "Dizem que o homus é o melhor da cidade"),
            T("me", "Duvido que seja melhor que o de Israel, mas topo testar 😄"),
            T("lucas", "Desafio aceito. Depois de amanhã às 20h?"),
            T("me", "Fechou"),
        ]),
        ep(8, 7, 0, &[
            T("lucas", "Hoje não vou conseguir correr, acordei com o joelho doendo"),
            T("me", "Descansa! Gelo e nada de heroísmo"),
            T("lucas", "Sim, senhora"),
        ]),
        ep_lid(7, 21, 30, &[
            Img("lucas", Pic::Hummus, "Olha o tamanho desse prato"),
            T("me", "Ok, o homus é bom mesmo. Admito."),
            T("lucas", "Falei!!! Anota aí: 1 x 0 pro Brasil"),
            R("me", 1, "Não vamos exagerar 😂"),
        ]),
        ep_lid(6, 6, 40, &[
            T("me", "Correu hoje?"),
            T("lucas", "Corri 5 km devagarinho, o joelho aguentou"),
            T("me", "Boa! Semana que vem volto a correr com você"),
        ]),
        ep(5, 16, 0, &[
            T("lucas", "Ei, você ainda tem aquela furadeira?"),
            T("me", "Tenho sim, quer emprestada?"),
            T("lucas", "Quero pendurar umas prateleiras no fim de semana"),
            T("me", "Passa aqui amanhã depois das 18h"),
            T("lucas", "Valeu! Levo uma cerveja de agradecimento"),
        ]),
        ep_lid(3, 19, 15, &[
            Voice("lucas", 34),
            T("me", "Kkkkk não acredito que a prateleira caiu"),
            T("lucas", "Caiu tudo. Livros, plantas, até o gato se assustou"),
            T("me", "Você usou bucha?"),
            T("lucas", "...o que é bucha"),
            T("me", "Ai Lucas 🤦‍♀️ vou aí te ajudar amanhã"),
        ]),
        ep_lid(1, 10, 0, &[
            T("lucas", "Prateleira reinstalada com bucha, obrigado professora"),
            Img("lucas", Pic::Shelves, "Prova"),
            Re("me", 1, "👏"),
            T("me", "Agora sim! Ficou reta até"),
        ]),
        ep(0, 13, 20, &[
            T("lucas", "Vai na pelada hoje?"),
            T("me", "Vou, mas chego atrasada, tenho call até as 19h"),
            T("lucas", "Guardo lugar no meu time"),
        ]),
    ],
};

#[rustfmt::skip]
const ROBERTO: Chat = Chat {
    with: With::Person("roberto"),
    episodes: &[
        ep(13, 10, 0, &[
            T("roberto", "Bom dia, Yael. Tudo bem? Só lembrando que o aluguel vence dia 5."),
            T("me", "Bom dia, Sr. Roberto! Tudo ótimo. Faço o Pix até amanhã."),
            T("roberto", "Perfeito, obrigado."),
        ]),
        ep(12, 9, 15, &[
            T("me", "Pix feito. Segue o comprovante."),
            Doc("me", "comprovante_pix_aluguel.pdf", ""),
            T("roberto", "Recebido, muito obrigado!"),
        ]),
        ep(10, 14, 0, &[
            T("roberto", "Yael, o condomínio vai fazer dedetização na semana que vem. Vão passar em todos os apartamentos."),
            T("me", "Obrigada por avisar. Preciso estar em casa?"),
            T("roberto", "Não precisa, pode deixar a chave na portaria."),
            T("me", "Combinado"),
        ]),
        ep(9, 8, 5, &[
            T("me", "Sr. Roberto, bom dia. Apareceu uma mancha de umidade no teto do banheiro."),
            Img("me", Pic::Stain, "Está assim desde ontem à noite"),
            T("roberto", "Nossa. Deve ser vazamento do apartamento de cima."),
            T("roberto", "Vou falar com o síndico hoje ainda."),
            T("me", "Obrigada. Está pingando um pouco quando alguém toma banho lá em cima."),
        ]),
        ep(8, 17, 40, &[
            T("roberto", "Falei com o síndico. O encanador pode ir aí amanhã às 14h?"),
            T("me", "Consigo sim, estou trabalhando de casa."),
            T("roberto", "Ótimo, o nome dele é Célio. Ele se apresenta na portaria."),
        ]),
        ep(7, 15, 30, &[
            T("me", "O Célio veio e trocou um cano no apartamento de cima. Disse que precisa secar uns dias antes de pintar."),
            T("roberto", "Que bom que resolveu. Me mande a nota depois, eu desconto do próximo aluguel."),
            T("me", "Combinado, ele disse que manda por e-mail."),
        ]),
        ep(4, 11, 20, &[
            T("roberto", "Yael, outra coisa: o contrato vence em fevereiro. Você pretende renovar?"),
            T("me", "Pretendo sim! Gosto muito do apartamento."),
            T("roberto", "Fico feliz. O reajuste vai ser pelo IPCA, como está no contrato."),
            R("me", 1, "Sem problemas. Pode me mandar a minuta quando tiver?"),
            Doc("roberto", "minuta_renovacao_contrato.pdf", "Segue a minuta. Dê uma olhada com calma."),
        ]),
        ep(2, 19, 0, &[
            T("me", "Li a minuta, está tudo certo. Só uma dúvida na cláusula 7, sobre a pintura na saída."),
            T("roberto", "Essa cláusula é padrão, mas se preferir podemos tirar."),
            T("me", "Se puder tirar, agradeço 🙏"),
            T("roberto", "Sem problema, vou ajustar."),
        ]),
        ep(0, 10, 30, &[
            T("roberto", "Bom dia! Mandei a versão final por e-mail. Podemos assinar digitalmente."),
            T("me", "Perfeito, assino hoje à tarde."),
            Re("roberto", 1, "👍"),
        ]),
    ],
};

#[rustfmt::skip]
const MARIANA: Chat = Chat {
    with: With::Person("mariana"),
    episodes: &[
        ep(12, 21, 0, &[
            T("mariana", "Oi Yael! Amei te conhecer na pelada 😊"),
            T("me", "Oi Mari! Eu também, você joga muito"),
            T("mariana", "Haha obrigada. Você comentou que queria melhorar o português, né?"),
            T("me", "Sim! Entendo quase tudo, mas na hora de falar ainda travo"),
            T("mariana", "Bora fazer troca? Eu quero praticar inglês"),
            T("me", "Adorei a ideia"),
        ]),
        ep(11, 22, 30, &[
            T("mariana", "Esqueci de perguntar: você prefere aula de manhã ou de tarde?"),
            T("me", "De tarde, depois das 16h é melhor pra mim"),
            T("mariana", "Anotado!"),
        ]),
        ep(10, 19, 0, &[
            T("mariana", "Primeira aula: a gente vai num café, meia hora só em português, depois meia hora em inglês"),
            T("me", "Perfeito. Conhece algum café bom?"),
            T("mariana", "Tem um ótimo na Vila Madalena, perto da praça"),
            T("me", "Fechado, amanhã às 17h?"),
            T("mariana", "Combinado!"),
        ]),
        ep(9, 18, 45, &[
            T("me", "Obrigada pela aula! Aprendi umas 20 gírias novas"),
            T("mariana", "Kkkk 'trampo', 'rolê' e 'mó' são essenciais"),
            T("me", "Vou num rolê depois do trampo, tô mó cansada"),
            T("mariana", "Perfeita, já é paulistana 😂"),
        ]),
        ep(7, 21, 10, &[
            T("mariana", "Assisti aquele filme israelense que você indicou"),
            T("me", "E aí, gostou?"),
            T("mariana", "Chorei no final, obrigada por isso 😭"),
            T("me", "Eu avisei que era triste"),
        ]),
        ep(6, 20, 30, &[
            Voice("mariana", 22),
            T("me", "Entendi tudo! Até o 'firmeza'"),
            T("mariana", "Evolução absurda"),
            T("mariana", "Ah, how do you say 'saudade' in English?"),
            T("me", "There's no exact word. Maybe 'I miss you', but saudade is deeper"),
            T("mariana", "That's why Portuguese is the best language 😌"),
        ]),
        ep(4, 12, 10, &[
            T("mariana", "Ei, você tem indicação de dentista? O meu se aposentou"),
            T("me", "Tenho! A Dra. Fernanda, em Pinheiros. Vou te passar o contato"),
            T("me", "Ela é ótima e não dói nada (quase)"),
            T("mariana", "Perfeito, valeu"),
        ]),
        ep(2, 17, 0, &[
            T("mariana", "Próxima aula essa semana? Posso depois de amanhã"),
            T("me", "Pode ser, no mesmo café?"),
            T("mariana", "Vamos variar, tem uma padaria ótima perto do metrô Fradique"),
            T("me", "Fechado 🥐"),
        ]),
        ep(0, 9, 30, &[
            T("mariana", "Bom dia! Lembra de trazer o livro que você falou"),
            T("me", "Já separei. Você vai amar"),
        ]),
    ],
};

#[rustfmt::skip]
const PELADA: Chat = Chat {
    with: With::Group(
        "120363025519384462",
        "Pelada dos Amigos ⚽",
        &["lucas", "thiago", "rafael", "bruno", "gabriel", "mariana"],
    ),
    episodes: &[
        ep(13, 20, 0, &[
            T("thiago", "Galera, quadra confirmada pra semana que vem, mesmo horário, 19h30"),
            T("rafael", "Tô dentro"),
            T("bruno", "Eu também"),
            T("gabriel", "Vou ver se consigo sair cedo do trabalho"),
            T("mariana", "Confirmada 💪"),
        ]),
        ep(12, 8, 10, &[
            T("thiago", "Lembrando: R$ 25 por pessoa, Pix pra mim até o dia do jogo"),
            T("lucas", "Mandei"),
            T("me", "Mandei também"),
            T("rafael", "Pago em dinheiro lá, pode ser?"),
            R("thiago", 1, "Pode"),
        ]),
        ep(11, 19, 20, &[
            T("gabriel", "Vou atrasar 15 min, trânsito na Rebouças"),
            T("thiago", "Começamos sem você 😂"),
            Loc("lucas", "Quadra Society Harmonia — Vila Madalena"),
            T("mariana", "Chegando"),
        ]),
        ep(11, 22, 10, &[
            T("bruno", "Que jogo!! 7 x 6 no final"),
            T("rafael", "A Yael fez dois gols, alguém avisa a seleção"),
            T("me", "Kkkkk sorte de principiante"),
            T("mariana", "Sorte nada, aquele segundo foi golaço"),
            Img("thiago", Pic::Pitch, "Foto da quadra no final"),
            Re("lucas", 1, "🔥"),
            T("gabriel", "Saí com a canela roxa mas valeu"),
        ]),
        ep(10, 9, 30, &[
            T("bruno", "Alguém viu minha garrafinha azul? Acho que esqueci na quadra"),
            T("mariana", "Tá comigo! Levo na próxima"),
            T("bruno", "Ufa, valeu Mari"),
        ]),
        ep(9, 12, 0, &[
            Poll("thiago", "Próxima pelada: mesmo horário ou mais cedo?\n19h30\n18h30\nTanto faz"),
            T("bruno", "Votei 19h30, antes não dá"),
            T("mariana", "18h30 seria melhor pra mim, mas vou no que der"),
        ]),
        ep(9, 21, 45, &[
            T("lucas", "Alguém sabe se a quadra tem vestiário com chuveiro?"),
            T("thiago", "Tem, mas a água é gelada"),
            T("lucas", "Vou direto pra casa então 😅"),
        ]),
        ep(8, 21, 0, &[
            T("rafael", "Alguém tem uma bomba de encher bola? A minha quebrou"),
            T("gabriel", "Tenho, levo na próxima"),
            T("rafael", "Valeu Gabi"),
        ]),
        ep(7, 19, 40, &[
            T("thiago", "Hoje tá faltando um pra fechar dois times"),
            At("thiago", "@me consegue trazer aquele seu vizinho que joga?"),
            R("me", 1, "Ele disse que vem! Chega às 20h"),
            T("thiago", "Salvou 🙏"),
        ]),
        ep(7, 22, 30, &[
            T("mariana", "Jogo mais equilibrado da história, 5 x 5"),
            T("bruno", "Empate é justo, ninguém merecia perder"),
            T("lucas", "Eu merecia ganhar, fiz três"),
            T("rafael", "Dois foram contra, Lucas"),
            T("lucas", "Gol é gol 🤷‍♂️"),
            Re("me", 2, "😂"),
        ]),
        ep(6, 20, 15, &[
            T("rafael", "Vocês viram o clássico ontem?"),
            T("thiago", "Nem me fala. Perdemos nos acréscimos"),
            T("lucas", "Sou corintiano, tô rindo até agora"),
            T("gabriel", "Aqui não se fala de time, regra do grupo 😤"),
            T("rafael", "Justo"),
        ]),
        ep(5, 11, 0, &[
            T("gabriel", "Gente, churrasco aqui em casa depois da próxima pelada?"),
            T("mariana", "Simmm"),
            T("thiago", "Eu levo a carne, cada um leva bebida"),
            T("me", "Eu levo uma salada israelense, alguém precisa comer verde 🥗"),
            T("bruno", "Salada em churrasco é ofensa 😂"),
            T("me", "Vai ter pão pita também"),
            T("bruno", "Ok, aí eu aceito"),
        ]),
        ep(4, 18, 30, &[
            T("gabriel", "Endereço pra quem não sabe: Rua Harmonia, 412, ap 31. Interfone não funciona, me liga quando chegar"),
            T("thiago", "Valeu"),
        ]),
        ep(3, 19, 30, &[
            T("thiago", "Chegando todo mundo? Quadra liberada"),
            T("rafael", "Tô no Uber"),
            T("mariana", "Estacionando"),
        ]),
        ep(3, 23, 40, &[
            Img("gabriel", Pic::Barbecue, "Churrasco oficial da pelada"),
            T("bruno", "A salada da Yael acabou antes da carne, confesso"),
            R("me", 1, "Registrado 😌"),
            Re("mariana", 2, "😂"),
            T("thiago", "Melhor noite do mês"),
        ]),
        ep(2, 12, 30, &[
            T("mariana", "Gente, alguém tem uma chuteira 37 sobrando? A minha rasgou"),
            T("me", "Tenho uma 37 que quase não usei, te empresto"),
            T("mariana", "Você é um anjo"),
        ]),
        ep(1, 20, 0, &[
            T("thiago", "Semana que vem quadra confirmada de novo. Quem vem?"),
            T("rafael", "Eu"),
            T("mariana", "Eu!"),
            T("lucas", "Presente"),
            T("gabriel", "Vou sim"),
            T("bruno", "Dessa vez não, viagem de trabalho 😕"),
        ]),
        ep(0, 18, 0, &[
            T("thiago", "Hoje tem! Alguém leva colete?"),
            T("gabriel", "Levo os coletes e a bomba"),
            T("mariana", "Vou levar água gelada"),
        ]),
    ],
};
